import Module, { createRequire } from 'node:module'

// WORKAROUND (test-only, same as packages/express/test/support): the root
// vitest config starts workers with `--conditions import`, so Express 5's
// router `require('is-promise')` gets is-promise's ESM namespace object and
// every handler fails with "isPromise is not a function". Point that one
// require at the CommonJS build. Import this before express.
const esmPath = createRequire(import.meta.url).resolve('is-promise')
const cjsPath = esmPath.replace(/index\.mjs$/, 'index.js')
type Resolve = (request: string, ...rest: unknown[]) => string
const loader = Module as unknown as { _resolveFilename: Resolve }
const resolve = loader._resolveFilename
loader._resolveFilename = function resolveIsPromise(this: unknown, request, ...rest) {
  if (request === 'is-promise') return cjsPath
  return resolve.call(this, request, ...rest)
}
