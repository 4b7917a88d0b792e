import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'

const run = promisify(execFile)
const fixture = fileURLToPath(new URL('./fixtures/ioredisLoaded.mjs', import.meta.url))

// ioredis is about 130 ms of a process's start: a gateway on local limits
// (no `redis.url`, every `hourglass gateway` started without Redis) paid it
// for nothing. It is loaded when a gateway is given a Redis URL. In a child
// process: a test worker has loaded ioredis for other files already.
it('a gateway without redis.url does not load ioredis; one with it does', async () => {
  expect(
    existsSync(new URL('../dist/index.js', import.meta.url)),
    'run `npm run build` first',
  ).toBe(true)
  const { stdout } = await run(process.execPath, [fixture], { timeout: 30_000 })
  expect(JSON.parse(stdout)).toEqual({ withoutRedis: false, withRedis: true })
})
