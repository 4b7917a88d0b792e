import { describe, expect, it } from 'vitest'
import { lookupError, replaceLookup } from '../../../../test/support/replaceLookup.js'
import { startGateway } from '../../src/index.js'

// A resolver that answers `slow-name.test` when the test says so (a slow DNS
// server), every other name as usual (as in unresolvableHost.test.ts).
let lookupAsked = () => {}
let answerLookup = () => {}
let failLookup = () => {}
replaceLookup((host) => {
  if (host !== 'slow-name.test') return undefined
  return new Promise((resolve, reject) => {
    answerLookup = () => resolve({ address: '127.0.0.1', family: 4 })
    failLookup = () => reject(lookupError('ENOTFOUND', host))
    lookupAsked()
  })
})

const CONFIG = {
  providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
  models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
}

/** startGateway on `slow-name.test`, once it is waiting for the lookup. */
async function startedOnSlowName() {
  // The process's own signal handling is what is under test: nothing else
  // in this worker may be listening already.
  expect(process.listenerCount('SIGTERM')).toBe(0)
  const asked = new Promise<void>((resolve) => {
    lookupAsked = resolve
  })
  const starting = startGateway({
    config: CONFIG,
    port: 0,
    host: 'slow-name.test',
    logger: () => {},
    drainOnSignals: false,
  })
  await asked
  // In an object: an async function's promise would wait for it.
  return { starting }
}

/**
 * Looking up a `host` name is part of starting, like the wait for Redis: a
 * SIGTERM while a slow resolver answers met no handler (signals were held
 * only from after the lookup) and killed the process (143, no drain, no
 * shutdown line), where one a moment later was held and drained.
 */
describe('a signal while startGateway looks its host name up', () => {
  it('is held and delivered again once startGateway has resolved, named in signalledWhileStarting', async () => {
    const { starting } = await startedOnSlowName()
    // What the signal finds mid-lookup: no listener was a SIGTERM killing
    // the process (here `emit`, so the worker survives the old code).
    const heldBy = process.listenerCount('SIGTERM')
    process.emit('SIGTERM', 'SIGTERM')
    answerLookup()
    const running = await starting
    // A handler installed right after it resolves (as the CLI's is) gets it.
    const delivered = new Promise<NodeJS.Signals>((resolve) => process.once('SIGTERM', resolve))
    try {
      expect(heldBy).toBe(1)
      expect(running.signalledWhileStarting).toBe('SIGTERM')
      expect(await delivered).toBe('SIGTERM')
      expect(process.listenerCount('SIGTERM')).toBe(0)
    } finally {
      await running.close()
    }
  })
  it('when the name then does not resolve: the option error is thrown, and the signal delivered again, not swallowed', async () => {
    const { starting } = await startedOnSlowName()
    process.emit('SIGTERM', 'SIGTERM')
    failLookup()
    const error = (await starting.then(
      () => undefined,
      (e: unknown) => e,
    )) as Error & { code?: unknown }
    // A handler installed right after it rejects gets the signal held meanwhile.
    const delivered = new Promise<NodeJS.Signals>((resolve) => process.once('SIGTERM', resolve))
    expect(error.code).toBe('GATEWAY_OPTION_INVALID')
    expect(await delivered).toBe('SIGTERM')
    expect(process.listenerCount('SIGTERM')).toBe(0)
  })
})
