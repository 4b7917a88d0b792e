import { fileURLToPath } from 'node:url'
import { assertBuilt, type NodeRun, runNode } from '../cli/runNode.js'

/**
 * Runs an example as a user changing it would: `node --import <hook>
 * index.mjs` in the folder of the test at `testUrl` (its `import.meta.url`),
 * the hook (a file beside it, or a path relative to it) adding a fault, a
 * shorter budget or a signal. `builtPackage` names the package whose build
 * the example imports last, checked first: a missing build is one clear
 * error, not a resolution failure in the child. A run still going after
 * 20 s is killed, and the test fails on its signal.
 */
export function runExampleWith(
  testUrl: string,
  hook: string,
  builtPackage: string,
): Promise<NodeRun> {
  assertBuilt(fileURLToPath(new URL(`../../packages/${builtPackage}/dist/index.js`, testUrl)))
  return runNode(
    [
      '--import',
      fileURLToPath(new URL(hook, testUrl)),
      fileURLToPath(new URL('./index.mjs', testUrl)),
    ],
    { killAfterMs: 20_000 },
  )
}
