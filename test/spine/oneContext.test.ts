import { execFile } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'
import { assertBuilt } from '../cli/runNode.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url))
// Every package of the repository that has a build (cli's bin and testkit's servers included).
const packages = readdirSync(new URL('../../packages', import.meta.url))

it('one AsyncLocalStorage for everything Hourglass carries: loading every package creates exactly one (core’s)', async () => {
  for (const name of packages) assertBuilt(`${root}packages/${name}/dist/index.js`)
  const script = fileURLToPath(new URL('./countStorages.mjs', import.meta.url))
  const { stdout } = await run(process.execPath, [script, packages.join(',')], {
    cwd: root,
    timeout: 30_000,
  })
  const { ours } = JSON.parse(stdout) as { total: number; ours: string[] }
  expect(ours).toHaveLength(1)
  expect(ours[0]).toMatch(/packages\/core\/dist\/context\.js/)
})
