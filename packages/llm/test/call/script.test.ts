import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { reply } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { useFakes } from './support/fakes.js'

const run = promisify(execFile)
const fakes = useFakes()

it('a script awaiting callModel through a 429 with Retry-After: 1 prints the answer and exits 0 (built package)', async () => {
  expect(existsSync(new URL('../../dist/index.js', import.meta.url)), 'run `npm run build`').toBe(
    true,
  )
  let calls = 0
  const fake = await fakes.start({
    dialect: 'openai',
    reply: () =>
      calls++ === 0
        ? reply.error(
            429,
            {
              error: {
                message: 'Rate limit reached',
                type: 'requests',
                code: 'rate_limit_exceeded',
              },
            },
            { 'retry-after': '1' },
          )
        : reply.text('after the wait'),
  })
  const script = fileURLToPath(new URL('../fixtures/retry-wait-script.mjs', import.meta.url))
  const { stdout } = await run(process.execPath, [script, fake.baseURL], { timeout: 20_000 })
  expect(JSON.parse(stdout)).toEqual({ text: 'after the wait' })
  expect(calls).toBe(2)
})
