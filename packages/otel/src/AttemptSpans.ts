import type { Span } from '@opentelemetry/api'

/**
 * What @hourglass/fetch's `EgressAttemptMessage` and `EgressAttemptEndMessage`
 * share that this needs, typed by shape: this file's .d.ts ships in the
 * tarball, and importing fetch's types there would make a user's TypeScript
 * look for a package @hourglass/otel does not depend on. Fetch's messages
 * still have to fit it where the handlers pass them in.
 */
interface AttemptMessage {
  readonly handle: object
}

/**
 * Open attempt spans, found again by the attempt's `handle` (the same object
 * in its start and end messages). Matching by URL and attempt number handed
 * identical attempts in flight at once — one URL fetched twice, in two
 * traces — each other's status and duration. Weakly held: an attempt that
 * never ends takes its entry with it.
 */
export class AttemptSpans {
  readonly #open = new WeakMap<object, Span>()

  add(m: AttemptMessage, span: Span): void {
    this.#open.set(m.handle, span)
  }

  take(m: AttemptMessage): Span | undefined {
    const span = this.#open.get(m.handle)
    this.#open.delete(m.handle)
    return span
  }
}
