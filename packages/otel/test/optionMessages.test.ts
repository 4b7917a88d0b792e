import { KNOWN_DEADLINE_SOURCES } from '@hourglass/core'
import {
  DeadlineContextManager,
  DeadlinePropagator,
  HourglassInstrumentation,
  instrumentDeadlines,
} from '@hourglass/otel'
import { metrics, ROOT_CONTEXT, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { expect, it } from 'vitest'

// A bad option reads the same whichever package refused it: the propagator
// shows the value after "got" with core's describeValue, as fetch, bullmq,
// express and core do — a string quoted and said to be one (so '5000' is not
// read as the number 5000), an array or object by kind — and still names the
// option. Nothing here sets OpenTelemetry's globals or measures time.

function message(options: unknown): string {
  try {
    new DeadlinePropagator(options as never)
  } catch (error) {
    return (error as Error).message
  }
  throw new Error('expected the options to be refused')
}

it('names the option and shows the bad value as every package does', () => {
  expect(message({ maxMs: '5000' })).toBe(
    "DeadlinePropagator: maxMs must be a number of ms ≥ 0, got '5000' (a string)",
  )
  expect(message({ maxMs: -1 })).toBe(
    'DeadlinePropagator: maxMs must be a number of ms ≥ 0, got -1',
  )
  expect(message({ maxMs: null })).toBe(
    'DeadlinePropagator: maxMs must be a number of ms ≥ 0, got null',
  )
  const sources = `DeadlinePropagator: sources must be an array of these header names: ${KNOWN_DEADLINE_SOURCES.join(', ')}`
  expect(message({ sources: 'grpc-timeout' })).toBe(`${sources}, got 'grpc-timeout' (a string)`)
  // An unknown name is named, as by every taker of such a list; a known one in any case is taken.
  expect(message({ sources: ['grpc_timeout'] })).toBe(
    `DeadlinePropagator: sources lists an unknown header "grpc_timeout" (known: ${KNOWN_DEADLINE_SOURCES.join(', ')})`,
  )
  expect(
    () => new DeadlinePropagator({ sources: ['X-Deadline-Remaining-Ms' as never] }),
  ).not.toThrow()
  expect(message({ clock: {} })).toBe(
    'DeadlinePropagator: clock must be a Clock (now, setTimeout and clearTimeout functions), got an object',
  )
  // A long string is cut to 40 characters, … last, not copied whole into the message.
  expect(message({ clock: 'x'.repeat(100) })).toBe(
    `DeadlinePropagator: clock must be a Clock (now, setTimeout and clearTimeout functions), got '${'x'.repeat(39)}…' (a string)`,
  )
})

it('new DeadlineContextManager() refuses what is no ContextManager at once, not at the first active() deep in the SDK', () => {
  const rule =
    'DeadlineContextManager: inner must be a ContextManager (active, with, bind, enable and disable functions)'
  const refused = (inner: unknown): unknown => {
    try {
      new DeadlineContextManager(inner as never)
    } catch (error) {
      return error
    }
    return undefined
  }
  for (const [inner, got] of [
    [undefined, 'undefined'],
    [null, 'null'],
    [{}, 'an object'],
    [{ active: () => ROOT_CONTEXT }, 'an object'],
    ['async-hooks', "'async-hooks' (a string)"],
    [5, '5'],
  ] as const) {
    const error = refused(inner)
    expect(error, `for ${got}`).toBeInstanceOf(TypeError)
    expect((error as Error).message).toBe(`${rule}, got ${got}`)
  }
  expect(refused(new AsyncLocalStorageContextManager())).toBeUndefined()
})

it('a provider that is none shows what it got as every package does, never a function’s source', () => {
  const refused = (use: () => void): string => {
    try {
      use()
    } catch (error) {
      expect(error).toBeInstanceOf(TypeError)
      return (error as Error).message
    }
    throw new Error('expected the provider to be refused')
  }
  // The getter itself, not what it returns: the message held its whole source text.
  expect(
    refused(() => instrumentDeadlines({ tracerProvider: trace.getTracerProvider as never })),
  ).toBe(
    '@hourglass/otel: tracerProvider must have a getTracer() method, got a function getTracerProvider',
  )
  const instrumentation = new HourglassInstrumentation({ enabled: false })
  expect(refused(() => instrumentation.setMeterProvider(metrics.getMeterProvider as never))).toBe(
    '@hourglass/otel: meterProvider must have a getMeter() method, got a function getMeterProvider',
  )
  expect(refused(() => instrumentation.setTracerProvider('sdk' as never))).toBe(
    "@hourglass/otel: tracerProvider must have a getTracer() method, got 'sdk' (a string)",
  )
  expect(refused(() => instrumentation.setTracerProvider({} as never))).toBe(
    '@hourglass/otel: tracerProvider must have a getTracer() method, got an object without getTracer()',
  )
  expect(refused(() => instrumentation.setTracerProvider(null as never))).toBe(
    '@hourglass/otel: tracerProvider must have a getTracer() method, got null',
  )
})
