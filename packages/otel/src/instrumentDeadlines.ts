import { refuseUnknownOptions } from '@hourglass/core'
import type { MeterProvider, TracerProvider } from '@opentelemetry/api'
import { HourglassInstrumentation } from './HourglassInstrumentation.js'

export interface InstrumentDeadlinesOptions {
  /**
   * Where spans go. Default: the global tracer provider, looked up lazily, so
   * an SDK registered after this call is still used.
   */
  tracerProvider?: TracerProvider | undefined
  /**
   * Where metrics go. Default: the global meter provider *at the time of this
   * call* — OpenTelemetry's metrics API has no lazy proxy, so register the SDK
   * first or pass the provider.
   */
  meterProvider?: MeterProvider | undefined
}

const OPTION_NAMES = Object.keys({
  tracerProvider: true,
  meterProvider: true,
} satisfies Record<keyof InstrumentDeadlinesOptions, true>)

/** Names no edit distance leads from: what the providers hand out. */
const MEANT_INSTEAD: ReadonlyMap<string, string> = new Map([
  ['tracer', 'tracerProvider'],
  ['meter', 'meterProvider'],
])

/** Unsubscribes every listener `instrumentDeadlines` added. Calling it twice is harmless. */
export type StopInstrumentation = () => void

/**
 * `HourglassInstrumentation` without NodeSDK: enabled at once, on the given
 * providers (or the global ones); `stop()` is its `disable()`.
 */
export function instrumentDeadlines(options: InstrumentDeadlinesOptions = {}): StopInstrumentation {
  // Before anything subscribes. Ignored, `{ meter: provider }` sent every
  // metric to the global meter provider — a no-op one without an SDK.
  refuseUnknownOptions(options, OPTION_NAMES, 'instrumentDeadlines()', { meant: MEANT_INSTEAD })
  const instrumentation = new HourglassInstrumentation({ enabled: false })
  // Null reads as absent (the global provider), as every option of the packages does.
  if (options.tracerProvider != null) {
    instrumentation.setTracerProvider(options.tracerProvider)
  }
  if (options.meterProvider != null) {
    instrumentation.setMeterProvider(options.meterProvider)
  }
  instrumentation.enable()
  return () => instrumentation.disable()
}
