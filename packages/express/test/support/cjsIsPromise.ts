import Module, { createRequire } from 'node:module'

// WORKAROUND for the root vitest config, which starts workers with
// `--conditions import`: CommonJS `require('is-promise')` (Express 5's router)
// then resolves is-promise's ESM build, Node 20.19+ hands back its namespace
// object, and every async handler fails with "isPromise is not a function".
// Point that one require at the CommonJS build. Imported before express.
const esmPath = createRequire(import.meta.url).resolve('is-promise')
const cjsPath = esmPath.replace(/index\.mjs$/, 'index.js')
type Resolve = (request: string, ...rest: unknown[]) => string
const loader = Module as unknown as { _resolveFilename: Resolve }
const resolve = loader._resolveFilename
loader._resolveFilename = function resolveIsPromise(this: unknown, request, ...rest) {
  if (request === 'is-promise') return cjsPath
  return resolve.call(this, request, ...rest)
}
