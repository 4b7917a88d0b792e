import { setImmediate as realTurn } from 'node:timers'
import { afterEach, expect, it, vi } from 'vitest'
import { holdSignals } from '../../src/holdSignals.js'

// startGateway run in-process by an app's test that fakes timers: a stop
// signal held while it started is delivered again on release, a turn later.
// That turn was the global setImmediate, which fake timers replace: the
// signal reached the handler installed after start only once the test moved
// fake time.

afterEach(() => {
  vi.useRealTimers()
})

it('a signal held while starting reaches the handler installed after release, under fake timers', async () => {
  // Held only when nobody listens yet (a worker of the test runner may).
  expect(process.listenerCount('SIGHUP')).toBe(0)
  const held = holdSignals()
  process.emit('SIGHUP', 'SIGHUP')
  expect(held.held).toBe('SIGHUP')
  const got: string[] = []
  const handler = (signal: string) => got.push(signal)
  process.on('SIGHUP', handler)
  try {
    vi.useFakeTimers()
    held.release()
    for (let turns = 0; turns < 100 && got.length === 0; turns++) {
      await new Promise<void>((resolve) => realTurn(resolve))
    }
    expect(got).toEqual(['SIGHUP'])
  } finally {
    process.off('SIGHUP', handler)
  }
})
