import { coreChannels } from '@hourglass/core'
import { DeadlinePropagator, HourglassInstrumentation, instrumentDeadlines } from '@hourglass/otel'
import { afterEach, describe, expect, it } from 'vitest'

// An option key nobody reads is a mistake, refused as express's deadline(),
// createFetch and the grpc interceptors refuse one: ignored, a typo left the
// default in force while its author believed otherwise —
// `new DeadlinePropagator({ maxMS: 5000 })` kept the 30 s cap on inbound
// budgets, `instrumentDeadlines({ meter: provider })` sent every metric to
// the global no-op meter. Nothing here sets OpenTelemetry's globals.

const enabled: HourglassInstrumentation[] = []
afterEach(() => {
  for (const i of enabled.splice(0)) i.disable()
})

function refusal(make: () => unknown): Error {
  try {
    const made = make()
    if (made instanceof HourglassInstrumentation) enabled.push(made)
    if (typeof made === 'function') made()
  } catch (error) {
    return error as Error
  }
  throw new Error('expected the options to be refused')
}

describe('DeadlinePropagator', () => {
  it.each([
    [
      'maxMS',
      { maxMS: 5000 },
      /^unknown option "maxMS" \(did you mean maxMs\?\); new DeadlinePropagator\(\) takes maxMs, sources, clock$/,
    ],
    ['source', { source: [] }, /^unknown option "source" \(did you mean sources\?\);/],
    // The name every ingress (deadline(), the grpc server interceptor) gives the same list.
    ['trust', { trust: ['grpc-timeout'] }, /^unknown option "trust" \(did you mean sources\?\);/],
    [
      'now',
      { now: () => 0 },
      /^unknown option "now"; new DeadlinePropagator\(\) takes maxMs, sources, clock$/,
    ],
  ])(
    'refuses the unknown option %s with a TypeError naming the one probably meant',
    (_, options, message) => {
      const error = refusal(() => new DeadlinePropagator(options as never))
      expect(error).toBeInstanceOf(TypeError)
      expect(error.message).toMatch(message)
    },
  )

  it('refuses options that are not an object', () => {
    const error = refusal(() => new DeadlinePropagator(5000 as never))
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toBe('new DeadlinePropagator(): options must be an object, got 5000')
  })

  it('still takes its own options, and none', () => {
    expect(() => new DeadlinePropagator()).not.toThrow()
    expect(
      () => new DeadlinePropagator({ maxMs: 100, sources: [], clock: undefined }),
    ).not.toThrow()
  })
})

describe('HourglassInstrumentation', () => {
  it('refuses an unknown config key with a TypeError naming the one probably meant, and subscribes nothing', () => {
    const error = refusal(() => new HourglassInstrumentation({ enable: false } as never))
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toBe(
      'unknown option "enable" (did you mean enabled?); new HourglassInstrumentation() takes enabled',
    )
    // Refused before enable(): no listener was left behind.
    expect(coreChannels.sliceEnd.hasSubscribers).toBe(false)
  })

  it('refuses an unknown key in setConfig too', () => {
    const instrumentation = new HourglassInstrumentation({ enabled: false })
    const error = refusal(() => instrumentation.setConfig({ enabeld: true } as never))
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toMatch(/^unknown option "enabeld" \(did you mean enabled\?\); /)
    // Named after the call made, not the constructor.
    expect(error.message).toMatch(/; HourglassInstrumentation\.setConfig\(\) takes enabled$/)
    expect(instrumentation.getConfig()).toEqual({ enabled: false })
  })

  // Read as truthy, `{ enabled: 'false' }` (a flag read from the environment
  // as it came) subscribed to every channel, and `{ enabled: 'true' }` in
  // setConfig then left NodeSDK believing it enabled.
  it.each([
    ['the string false', 'false', "'false' (a string)"],
    ['the string true', 'true', "'true' (a string)"],
    ['a number', 0, '0'],
  ])('refuses an enabled that is %s, naming it, and subscribes nothing', (_, value, got) => {
    const error = refusal(() => new HourglassInstrumentation({ enabled: value } as never))
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toBe(
      `new HourglassInstrumentation(): enabled must be true or false, got ${got}`,
    )
    expect(coreChannels.sliceEnd.hasSubscribers).toBe(false)
    const off = new HourglassInstrumentation({ enabled: false })
    const again = refusal(() => off.setConfig({ enabled: value } as never))
    expect(again).toBeInstanceOf(TypeError)
    expect(again.message).toMatch(/^HourglassInstrumentation\.setConfig\(\): enabled must be /)
    expect(off.getConfig()).toEqual({ enabled: false })
  })

  it('keeps OpenTelemetry’s InstrumentationConfig key enabled', () => {
    const off = new HourglassInstrumentation({ enabled: false })
    expect(off.getConfig()).toEqual({ enabled: false })
    expect(coreChannels.sliceEnd.hasSubscribers).toBe(false)
    const on = new HourglassInstrumentation({ enabled: true })
    enabled.push(on)
    expect(coreChannels.sliceEnd.hasSubscribers).toBe(true)
    on.setConfig({ enabled: false })
    expect(on.getConfig()).toEqual({ enabled: false })
  })

  // As OpenTelemetry's base class spreads it: code written for any
  // instrumentation (`setConfig(saved)`, a config table's missing entry) got
  // "options must be an object, got null", or for undefined a TypeError
  // from destructuring that named nothing.
  it('takes no config (null, undefined) as the default one, in setConfig and the constructor', () => {
    const off = new HourglassInstrumentation({ enabled: false })
    for (const none of [null, undefined]) {
      off.setConfig({ enabled: false })
      off.setConfig(none)
      expect(off.getConfig()).toEqual({ enabled: true })
      // The config alone changed, as in OpenTelemetry's: nothing subscribed.
      expect(coreChannels.sliceEnd.hasSubscribers).toBe(false)
    }
    // Kept as given, as OpenTelemetry keeps it: registerInstrumentations
    // then enables it (it enables what getConfig().enabled does not say is on).
    off.setConfig({ enabled: null } as never)
    expect(off.getConfig()).toEqual({ enabled: null })
    const on = new HourglassInstrumentation(null)
    enabled.push(on)
    expect(on.getConfig()).toEqual({ enabled: true })
    expect(coreChannels.sliceEnd.hasSubscribers).toBe(true)
  })
})

describe('instrumentDeadlines', () => {
  it.each([
    [
      'meter',
      { meter: {} },
      /^unknown option "meter" \(did you mean meterProvider\?\); instrumentDeadlines\(\) takes tracerProvider, meterProvider$/,
    ],
    ['tracer', { tracer: {} }, /^unknown option "tracer" \(did you mean tracerProvider\?\);/],
    [
      'tracerProvder',
      { tracerProvder: {} },
      /^unknown option "tracerProvder" \(did you mean tracerProvider\?\);/,
    ],
    [
      'enabled',
      { enabled: false },
      /^unknown option "enabled"; instrumentDeadlines\(\) takes tracerProvider, meterProvider$/,
    ],
  ])(
    'refuses the unknown option %s, naming the one probably meant, and subscribes nothing',
    (_, options, message) => {
      const error = refusal(() => instrumentDeadlines(options as never))
      expect(error).toBeInstanceOf(TypeError)
      expect(error.message).toMatch(message)
      expect(coreChannels.sliceEnd.hasSubscribers).toBe(false)
    },
  )

  // Null reads as absent, as every option of the packages does: it threw
  // "tracerProvider must be a TracerProvider, got null".
  it('takes a null provider as none given (the global one), as every option reads null', () => {
    const stop = instrumentDeadlines({ tracerProvider: null, meterProvider: null } as never)
    try {
      expect(coreChannels.sliceEnd.hasSubscribers).toBe(true)
    } finally {
      stop()
    }
    expect(coreChannels.sliceEnd.hasSubscribers).toBe(false)
  })
})
