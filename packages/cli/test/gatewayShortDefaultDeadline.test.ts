import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeAll, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// A config whose deadline.defaultMs is at most the gateway's 25 ms reply
// reserve passes the config schema but is refused by createGateway. The CLI
// exited 1 ("failed") with createGateway's line about `replyReserveMs`, an
// option `hourglass gateway` has no flag for, though its README promises a
// config the gateway rejects is a bad argument: exit 2, naming the field.
// The gateway refuses before it opens anything, so main() runs in-process.

// The command imports the gateway when it runs: loaded once here, so the
// test times the command, not the first transform of the gateway's sources.
beforeAll(async () => {
  await import('@hourglass/gateway')
})

let dir: string | undefined
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

/** `hourglass gateway` run on a config of one provider and model with `deadline`. */
async function gatewayWith(deadline: Record<string, number>) {
  dir = mkdtempSync(join(tmpdir(), 'hourglass-cli-'))
  const config = join(dir, 'gateway.json')
  writeFileSync(
    config,
    JSON.stringify({
      providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
      models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
      deadline,
    }),
  )
  return { config, run: await runMain(['gateway', '--config', config, '--port', '0']) }
}

it('deadline.defaultMs of 20 ms is a bad argument (exit 2) naming the file and the field', async () => {
  const { config, run } = await gatewayWith({ defaultMs: 20 })
  expect(run.code).toBe(2)
  expect(run.stderr.trim().split('\n')).toEqual([
    `hourglass gateway: ${config}: deadline.defaultMs: must be more than 35 ms: the deadline keeps at least 10 ms (the floor of its adaptive reserveMs) and the gateway 25 ms to write its 504, and every request without a deadline header would be answered 504 on arrival (got 20)`,
  ])
  expect(run.stdout).toBe('')
})

it('deadline.maxMs of 20 ms alone, which the default budget follows, says so (raising defaultMs alone would be refused as above maxMs)', async () => {
  const { config, run } = await gatewayWith({ maxMs: 20 })
  expect(run.code).toBe(2)
  expect(run.stderr.trim().split('\n')).toEqual([
    `hourglass gateway: ${config}: deadline.defaultMs: must be more than 35 ms: the deadline keeps at least 10 ms (the floor of its adaptive reserveMs) and the gateway 25 ms to write its 504, and every request without a deadline header would be answered 504 on arrival (got 20; left out, defaultMs is deadline.maxMs)`,
  ])
})

// The deadline keeps its own reserve first (the config's reserveMs, or at
// least the adaptive one's 10 ms floor): `defaultMs: 30`, or `defaultMs:
// 1000` with `reserveMs: 980`, started, and every request without a deadline
// header was answered 504 on arrival, no provider asked. createGateway
// refuses them at the config's field, which the command says as for any bad
// field.
it('deadline.defaultMs of 30 ms with no reserveMs: a bad argument naming the reserve floor', async () => {
  const { config, run } = await gatewayWith({ defaultMs: 30 })
  expect(run.code).toBe(2)
  expect(run.stderr.trim().split('\n')).toEqual([
    `hourglass gateway: ${config}: deadline.defaultMs: must be more than 35 ms: the deadline keeps at least 10 ms (the floor of its adaptive reserveMs) and the gateway 25 ms to write its 504, and every request without a deadline header would be answered 504 on arrival (got 30)`,
  ])
  expect(run.stdout).toBe('')
})

it('deadline.reserveMs that leaves no more than 25 ms of defaultMs: a bad argument at reserveMs', async () => {
  const { config, run } = await gatewayWith({ defaultMs: 1000, reserveMs: 980 })
  expect(run.code).toBe(2)
  expect(run.stderr.trim().split('\n')).toEqual([
    `hourglass gateway: ${config}: deadline.reserveMs: must be less than 975 ms, deadline.defaultMs less the 25 ms the gateway keeps to write its 504: every request without a deadline header would be answered 504 on arrival (got 980)`,
  ])
})
