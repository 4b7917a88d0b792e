import { describeValue } from '@hourglass/core'
import type { Context, ContextManager } from '@opentelemetry/api'
import { parentContext } from './deadlineSpans.js'

/**
 * A `ContextManager` that makes the span of the current gRPC call or job
 * active for every instrumentation, not only for this package's spans.
 *
 * `@hourglass/grpc` runs a handler, and `@hourglass/bullmq` a processor,
 * inside the Hourglass deadline but outside any OpenTelemetry context: the
 * call's and the job's spans exist, but `context.active()` there has no span,
 * so an undici or http client span made inside starts a trace of its own —
 * and sends that trace's `traceparent` on. Wrapped in this, `active()` falls
 * back to the span of the current deadline's call or job whenever the wrapped
 * manager's context has no span; every other method is the wrapped one's.
 *
 * ```ts
 * provider.register({
 *   // `otelContextManager`: the one you would register anyway
 *   // (@opentelemetry/context-async-hooks' manager, which owns its storage).
 *   contextManager: new DeadlineContextManager(otelContextManager),
 * })
 * ```
 *
 * A context with a span is never overridden: with an instrumentation that
 * makes its own spans active (instrumentation-grpc, BullMQ telemetry), those
 * stay the parents.
 */
export class DeadlineContextManager implements ContextManager {
  readonly #inner: ContextManager

  constructor(inner: ContextManager) {
    // Checked here, as the package's other constructors check theirs: taken
    // as it came, `undefined` (a manager not yet made, a bad import) failed
    // only at the first `active()`, inside the SDK, far from this line.
    if (!isContextManager(inner)) {
      // A TypeError whatever was passed (core's optionError makes a number a RangeError).
      throw new TypeError(
        `DeadlineContextManager: inner must be a ContextManager (active, with, bind, enable and disable functions), got ${describeValue(inner)}`,
      )
    }
    this.#inner = inner
  }

  active(): Context {
    return parentContext(undefined, this.#inner.active())
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#inner.with(context, fn, thisArg, ...args)
  }

  bind<T>(context: Context, target: T): T {
    return this.#inner.bind(context, target)
  }

  enable(): this {
    this.#inner.enable()
    return this
  }

  disable(): this {
    this.#inner.disable()
    return this
  }
}

function isContextManager(value: unknown): value is ContextManager {
  if (typeof value !== 'object' || value === null) return false
  const m = value as Record<keyof ContextManager, unknown>
  return (
    typeof m.active === 'function' &&
    typeof m.with === 'function' &&
    typeof m.bind === 'function' &&
    typeof m.enable === 'function' &&
    typeof m.disable === 'function'
  )
}
