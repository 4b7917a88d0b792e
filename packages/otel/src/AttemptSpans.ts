import type { EgressAttemptEndMessage, EgressAttemptMessage } from '@hourglass/fetch'
import type { Span } from '@opentelemetry/api'

/**
 * Open attempt spans, matched to their end message by deadline, method, URL
 * and attempt number (the messages are separate objects). Identical attempts
 * in flight at once are matched first-in first-out; they are indistinguishable
 * anyway.
 */
export class AttemptSpans {
  readonly #byDeadline = new WeakMap<object, Map<string, Span[]>>()
  readonly #noDeadline = {}

  add(m: EgressAttemptMessage, span: Span): void {
    const owner = m.deadline ?? this.#noDeadline
    let open = this.#byDeadline.get(owner)
    if (!open) {
      open = new Map()
      this.#byDeadline.set(owner, open)
    }
    const key = keyOf(m)
    const list = open.get(key)
    if (list) list.push(span)
    else open.set(key, [span])
  }

  take(m: EgressAttemptEndMessage): Span | undefined {
    const open = this.#byDeadline.get(m.deadline ?? this.#noDeadline)
    const key = keyOf(m)
    const list = open?.get(key)
    const span = list?.shift()
    if (list?.length === 0) open?.delete(key)
    return span
  }
}

function keyOf(m: { method: string; url: string; attempt: number }): string {
  return `${m.attempt} ${m.method} ${m.url}`
}
