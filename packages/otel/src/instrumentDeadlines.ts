import { type HourglassChannel, onChannels } from '@hourglass/core'
import { diag, type MeterProvider, metrics, type TracerProvider, trace } from '@opentelemetry/api'
import type { ObservedGroups } from './handlers.js'
import { metricHandlers } from './metricHandlers.js'
import { traceHandlers } from './traceHandlers.js'

const SCOPE_NAME = '@hourglass/otel'
const SCOPE_VERSION = '0.1.0'

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

/** Unsubscribes every listener `instrumentDeadlines` added. Calling it twice is harmless. */
export type StopInstrumentation = () => void

/**
 * Subscribe to every Hourglass diagnostics channel and turn the events into
 * spans, span events and metrics (names in `attributes.ts`). Until this is
 * called, no channel has a subscriber, so the packages publish nothing and
 * pay nothing; `stop()` returns them to that state.
 *
 * Channels are found through core's registry, by the groups their packages
 * define (`core`, `express`, `fetch`, `llm`): a package loaded after this call
 * is subscribed to when it loads, and one never loaded costs nothing.
 */
export function instrumentDeadlines(options: InstrumentDeadlinesOptions = {}): StopInstrumentation {
  const tracer = (options.tracerProvider ?? trace).getTracer(SCOPE_NAME, SCOPE_VERSION)
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(
    SCOPE_NAME,
    SCOPE_VERSION,
  )
  const stops: Array<() => void> = []
  for (const handlers of [traceHandlers(tracer), metricHandlers(meter)]) {
    for (const group of Object.keys(handlers) as Array<keyof ObservedGroups>) {
      const byKey = handlers[group] as GroupHandlers
      stops.push(onChannels(group, (channels) => subscribe(channels, byKey, stops)))
    }
  }
  return () => {
    for (const stop of stops.splice(0)) stop()
  }
}

/** One group's handlers, loosened: `Handlers` has checked each against its channel's message. */
type GroupHandlers = Record<string, ((message: unknown) => void) | undefined>

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
