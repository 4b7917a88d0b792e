import { setImmediate as realTurn } from 'node:timers'
import { afterEach, expect, it, vi } from 'vitest'
import { startGateway } from '../../src/index.js'

// An app's test that fakes timers (to drive its own retry waits or caches)
// and starts the gateway in-process: `close()` must end without the test
// moving fake time. It waits for two turns of the loop (requests still in
// the sockets' buffers read first), and those turns were the global
// `setImmediate`, which fake timers replace: close() never resolved.

afterEach(() => {
  vi.useRealTimers()
})

/** Resolves `'turns'` after `count` turns of the real loop: no fake timer holds it back. */
function realTurns(count: number): Promise<'turns'> {
  return new Promise((resolve) => {
    let left = count
    const next = () => (--left <= 0 ? resolve('turns') : realTurn(next))
    realTurn(next)
  })
}

it("close() of a gateway started in-process ends under an app test's fake timers", async () => {
  const running = await startGateway({
    config: {
      providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
      models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
    },
    port: 0,
    host: '127.0.0.1',
    logger: () => {},
    drainOnSignals: false,
  })
  vi.useFakeTimers()
  const closed = running.close().then(() => 'closed' as const)
  try {
    expect(await Promise.race([closed, realTurns(2_000)])).toBe('closed')
  } finally {
    // Run what fake time still holds (the two turns the close waits for),
    // then real time again: a failure leaves the gateway closed, nothing
    // open for the later files of this worker.
    for (let i = 0; i < 4; i++) vi.runOnlyPendingTimers()
    vi.useRealTimers()
    await closed
  }
})
