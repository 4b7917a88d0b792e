import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { closedPort } from '@hourglass/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { assertBuilt, hourglassBin, runNode } from './runNode.js'

let dir: string
beforeEach(async () => {
  assertBuilt()
  dir = await mkdtemp(join(tmpdir(), 'hourglass-gateway-host-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('hourglass gateway --host that does not resolve, with a redis.url in the config', () => {
  it('is one line on stderr and exit 2, before Redis is dialled (no Redis warning first)', async () => {
    // The README's kind of config: limits shared through Redis. Here nothing
    // listens on the Redis port, so dialling it would log an `unreachable` warning.
    const port = await closedPort()
    const file = join(dir, 'gateway.json')
    await writeFile(
      file,
      JSON.stringify({
        providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:1/v1', apiKeys: ['k'] } },
        models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
        redis: { url: `redis://127.0.0.1:${port}` },
      }),
    )
    const run = await runNode(
      [hourglassBin, 'gateway', '--config', file, '--host', 'no-such-host.invalid'],
      { killAfterMs: 20_000 },
    )
    expect(run.code).toBe(2)
    expect(run.stderr.trim().split('\n')).toEqual([
      'hourglass gateway: cannot listen on no-such-host.invalid: the host name does not resolve (set --host or HOST; in a container, 0.0.0.0)',
    ])
  })
})
