import {
  describeValue,
  type HourglassChannel,
  onChannels,
  refuseUnknownOptions,
} from '@hourglass/core'
import { diag, type MeterProvider, metrics, type TracerProvider } from '@opentelemetry/api'
import { globalTracer } from './globalTracer.js'
import type { Handlers, ObservedGroups } from './handlers.js'
import { metricHandlers } from './metricHandlers.js'
import { traceHandlers } from './traceHandlers.js'

const SCOPE_NAME = '@hourglass/otel'
const SCOPE_VERSION = '0.1.0'

// Instances enabled in this process: two would record everything twice.
let enabledCount = 0

/** What `new HourglassInstrumentation(config)` takes (OpenTelemetry's `InstrumentationConfig`). */
export interface HourglassInstrumentationConfig {
  /**
   * Subscribe at construction. Default `true`, as every OpenTelemetry
   * instrumentation does; NodeSDK enables one constructed with `false` when
   * it starts, but not one `disable()`d since (it reads the config alone, as
   * for OpenTelemetry's own): call `enable()` after the new SDK starts.
   */
  enabled?: boolean
}

/** OpenTelemetry's `InstrumentationConfig` has `enabled` alone; this one reads nothing else. */
const CONFIG_NAMES = Object.keys({
  enabled: true,
} satisfies Record<keyof HourglassInstrumentationConfig, true>)

/**
 * The config as kept, as OpenTelemetry's base class keeps it: `{ enabled:
 * true, ...config }` (an `enabled` given as undefined or null stays so, and
 * `registerInstrumentations`, which enables what `getConfig().enabled` does
 * not say is on, enables it). No config at all (`null`, `undefined`) is the
 * default one, as OpenTelemetry's `setConfig` spreads it: code written for
 * any instrumentation (`i.setConfig(saved)`, a config table's missing entry)
 * got "options must be an object, got null", or a `Cannot destructure`
 * TypeError naming nothing for `undefined`.
 */
function readConfig(
  config: HourglassInstrumentationConfig | null | undefined,
  caller: string,
): HourglassInstrumentationConfig {
  if (config == null) return { enabled: true }
  checkConfig(config, caller)
  return { enabled: true, ...config }
}

/**
 * An unknown key is a mistake, refused as deadline() and createFetch() refuse
 * one: ignored, `{ enable: false }` left the instrumentation subscribed.
 */
function checkConfig(config: HourglassInstrumentationConfig, caller: string): void {
  refuseUnknownOptions(config, CONFIG_NAMES, caller)
  // Read as truthy, `{ enabled: 'false' }` (a flag taken from the
  // environment as it came) subscribed to every channel. Null reads as
  // absent, as every option of the packages does.
  const { enabled } = config
  if (enabled !== undefined && enabled !== null && typeof enabled !== 'boolean') {
    // A TypeError whatever was passed (core's optionError makes a number a RangeError).
    throw new TypeError(`${caller}: enabled must be true or false, got ${describeValue(enabled)}`)
  }
}

/**
 * Every Hourglass diagnostics channel as spans, span events and metrics, in
 * the shape of an OpenTelemetry instrumentation: pass it to NodeSDK's
 * `instrumentations: []` (or `registerInstrumentations`), which hands it the
 * SDK's tracer and meter providers.
 *
 * It has the members of `Instrumentation` from `@opentelemetry/instrumentation`
 * (checked against it in the tests) without importing that package: nothing
 * is patched, the channels are found through core's registry (`onChannels`),
 * so a package loaded after `enable()` is subscribed to when it loads.
 *
 * Until `enable()` — and again after `disable()` — no channel has a
 * subscriber, so the packages build no message and pay nothing.
 */
export class HourglassInstrumentation {
  readonly instrumentationName = SCOPE_NAME
  readonly instrumentationVersion = SCOPE_VERSION

  #config: HourglassInstrumentationConfig
  // Undefined: the global one, looked up at each span (see `globalTracer`).
  #tracerProvider: TracerProvider | undefined
  #meterProvider: MeterProvider = metrics.getMeterProvider()
  #enabled = false
  readonly #traceStops: Array<() => void> = []
  readonly #metricStops: Array<() => void> = []
  // gRPC calls whose expiry this instrumentation counted: kept across its
  // cycles (each makes new handlers), so a dark-mode call counts once.
  readonly #grpcExpired = new WeakSet<object>()

  constructor(config?: HourglassInstrumentationConfig | null) {
    this.#config = readConfig(config, 'new HourglassInstrumentation()')
    // An `enabled` given as null or undefined enables, as it always did here.
    if (this.#config.enabled ?? true) this.enable()
  }

  /** Subscribe to every channel. Calling it twice is harmless. */
  enable(): void {
    if (this.#enabled) return
    if (enabledCount > 0) {
      diag.warn(
        '@hourglass/otel: a second HourglassInstrumentation (or instrumentDeadlines()) is enabled; each records every span, event and metric, so they will all come twice',
      )
    }
    enabledCount++
    this.#enabled = true
    try {
      this.#subscribeTraces()
      this.#subscribeMetrics()
    } catch (error) {
      // A provider that throws (not a provider at all): undo what was done,
      // or the listeners already added stay with nobody to remove them, and
      // the next instrumentation records every span twice.
      this.disable()
      throw error
    }
  }

  /** Unsubscribe every listener; a package loaded later is not subscribed to. Calling it twice is harmless. */
  disable(): void {
    if (this.#enabled) enabledCount--
    this.#enabled = false
    stopAll(this.#traceStops)
    stopAll(this.#metricStops)
  }

  /**
   * Where spans go. Default: the global tracer provider, looked up again
   * whenever it is another object (`globalTracer`), so an SDK registered
   * later, after `trace.disable()` too, gets the spans. While enabled, listeners are moved to the
   * new provider: spans open at that moment are not ended.
   */
  setTracerProvider(tracerProvider: TracerProvider): void {
    checkProvider('tracerProvider', 'getTracer', tracerProvider)
    this.#tracerProvider = tracerProvider
    if (this.#enabled) this.#subscribeTraces()
  }

  /**
   * Where metrics go. Default: the global meter provider at construction —
   * the metrics API has no lazy proxy, which is why NodeSDK calls this again
   * once its provider exists.
   */
  setMeterProvider(meterProvider: MeterProvider): void {
    checkProvider('meterProvider', 'getMeter', meterProvider)
    this.#meterProvider = meterProvider
    if (this.#enabled) this.#subscribeMetrics()
  }

  /** Replaces the config; `enabled` (default `true`) takes effect at the next construction, as in OpenTelemetry's base class. */
  setConfig(config?: HourglassInstrumentationConfig | null): void {
    this.#config = readConfig(config, 'HourglassInstrumentation.setConfig()')
  }

  getConfig(): HourglassInstrumentationConfig {
    return this.#config
  }

  #subscribeTraces(): void {
    stopAll(this.#traceStops)
    const tracer =
      this.#tracerProvider === undefined
        ? globalTracer(SCOPE_NAME, SCOPE_VERSION)
        : this.#tracerProvider.getTracer(SCOPE_NAME, SCOPE_VERSION)
    subscribeAll(traceHandlers(tracer), this.#traceStops)
  }

  #subscribeMetrics(): void {
    stopAll(this.#metricStops)
    const meter = this.#meterProvider.getMeter(SCOPE_NAME, SCOPE_VERSION)
    subscribeAll(metricHandlers(meter, this.#grpcExpired), this.#metricStops)
  }
}

/**
 * A TypeError naming the option now, not a `getTracer is not a function` from
 * inside `enable()`. What it got is shown as every package shows a bad option
 * (core's `describeValue`): `String()` of the getter passed instead of what it
 * returns (`trace.getTracerProvider`) put the function's whole source in the message.
 */
function checkProvider(name: string, method: string, provider: unknown): void {
  const p = provider as Record<string, unknown> | null
  if (typeof p === 'object' && p !== null && typeof p[method] === 'function') return
  const got =
    typeof p === 'object' && p !== null ? `an object without ${method}()` : describeValue(p)
  throw new TypeError(`@hourglass/otel: ${name} must have a ${method}() method, got ${got}`)
}

function stopAll(stops: Array<() => void>): void {
  for (const stop of stops.splice(0)) stop()
}

/** One group's handlers, loosened: `Handlers` has checked each against its channel's message. */
type GroupHandlers = Record<string, ((message: unknown) => void) | undefined>

function subscribeAll(handlers: Handlers, stops: Array<() => void>): void {
  for (const group of Object.keys(handlers) as Array<keyof ObservedGroups>) {
    const byKey = handlers[group] as GroupHandlers
    stops.push(onChannels(group, (channels) => subscribe(channels, byKey, stops)))
  }
}

function subscribe(
  channels: Readonly<Record<string, HourglassChannel<unknown>>>,
  handlers: GroupHandlers,
  stops: Array<() => void>,
): void {
  for (const [key, handler] of Object.entries(handlers)) {
    // An older copy of the publisher may lack a newer channel: nothing to listen to.
    const channel = channels[key]
    if (!channel || !handler) continue
    const listener = safely(channel.name, handler)
    channel.subscribe(listener)
    stops.push(() => channel.unsubscribe(listener))
  }
}

/**
 * A throwing subscriber would surface as an uncaught exception in the
 * request's process (diagnostics_channel rethrows on the next tick):
 * telemetry must never take a request down, so failures go to OTel's diag log.
 */
function safely(name: string, handler: (message: unknown) => void): (message: unknown) => void {
  return (message) => {
    try {
      handler(message)
    } catch (error) {
      diag.error(`@hourglass/otel: handler for ${name} failed`, error)
    }
  }
}
