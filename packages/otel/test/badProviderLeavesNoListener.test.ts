import { coreChannels } from '@hourglass/core'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

let otel: ReturnType<typeof setupOtel>
// A call that should throw but returns (the bug back) is stopped all the same:
// the test fails here, not the next file that shares the process.
const started: StopInstrumentation[] = []
beforeEach(() => {
  otel = setupOtel()
})
afterEach(async () => {
  for (const stop of started.splice(0)) stop()
  await otel.shutdown()
})

const listening = () => Object.values(coreChannels).some((channel) => channel.hasSubscribers)
const instrument = (options: Parameters<typeof instrumentDeadlines>[0]) => {
  started.push(instrumentDeadlines(options))
}

/**
 * A provider that is not one is refused by name, and leaves nothing behind.
 * It used to throw from inside `enable()` after the trace listeners were
 * added: the caller got no `stop()`, those listeners stayed for good, and
 * the next (correct) `instrumentDeadlines()` recorded every span twice.
 */
it('a meterProvider without getMeter() is a TypeError naming it, and no listener stays', () => {
  expect(listening()).toBe(false)
  expect(() =>
    instrument({ tracerProvider: otel.tracerProvider, meterProvider: {} as never }),
  ).toThrow(/meterProvider must have a getMeter\(\) method/)
  expect(listening()).toBe(false)
})

// Null reads as none given (the global provider): unknownOptions.test.ts.
it('a tracerProvider that is not one (a number, an object without getTracer) is a TypeError naming it', () => {
  for (const tracerProvider of [5, {}]) {
    expect(() => instrument({ tracerProvider: tracerProvider as never })).toThrow(
      /tracerProvider must have a getTracer\(\) method/,
    )
  }
  expect(listening()).toBe(false)
})
