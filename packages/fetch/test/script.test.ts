import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { faultServer } from '@hourglass/testkit'
import { expect, it } from 'vitest'

const run = promisify(execFile)

it('a script awaiting createFetch through a Retry-After: 1 wait prints the answer and exits 0 (built package)', async () => {
  expect(existsSync(new URL('../dist/index.js', import.meta.url)), 'run `npm run build`').toBe(true)
  const server = await faultServer((_r, i) =>
    i === 0
      ? { type: 'retry-after', status: 503, retryAfter: 1 }
      : { type: 'respond', body: 'second' },
  )
  try {
    const script = fileURLToPath(new URL('./fixtures/retry-wait-script.mjs', import.meta.url))
    const { stdout } = await run(process.execPath, [script, server.url], { timeout: 20_000 })
    expect(JSON.parse(stdout)).toEqual({ status: 200, body: 'second' })
    expect(server.records).toHaveLength(2)
  } finally {
    await server.close()
  }
})
