import type { EgressAttemptEndMessage, EgressAttemptMessage } from '@hourglass/fetch'
import type { Span } from '@opentelemetry/api'

/**
 * Open attempt spans, found again by the attempt's `handle` (the same object
 * in its start and end messages). Matching by URL and attempt number handed
 * identical attempts in flight at once — one URL fetched twice, in two
 * traces — each other's status and duration. Weakly held: an attempt that
 * never ends takes its entry with it.
 */
export class AttemptSpans {
  readonly #open = new WeakMap<object, Span>()

  add(m: EgressAttemptMessage, span: Span): void {
    this.#open.set(m.handle, span)
  }

  take(m: EgressAttemptEndMessage): Span | undefined {
    const span = this.#open.get(m.handle)
    this.#open.delete(m.handle)
    return span
  }
}
