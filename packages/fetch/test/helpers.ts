import diagnostics from 'node:diagnostics_channel'
import {
  type Clock,
  channelNames,
  type EgressAttemptEndMessage,
  type EgressAttemptMessage,
  type EgressRetryMessage,
  type EgressRetrySkippedMessage,
  systemClock,
  type TimerOptions,
} from '@hourglass/core'

export interface EgressEvents {
  attempts: EgressAttemptMessage[]
  ends: EgressAttemptEndMessage[]
  retries: EgressRetryMessage[]
  skipped: EgressRetrySkippedMessage[]
  stop(): void
}

/** Subscribe to every egress channel for the length of a test. */
export function recordEgress(): EgressEvents {
  const events: EgressEvents = { attempts: [], ends: [], retries: [], skipped: [], stop: () => {} }
  const subs: [string, (m: unknown) => void][] = [
    [channelNames.egressAttempt, (m) => events.attempts.push(m as EgressAttemptMessage)],
    [channelNames.egressAttemptEnd, (m) => events.ends.push(m as EgressAttemptEndMessage)],
    [channelNames.egressRetry, (m) => events.retries.push(m as EgressRetryMessage)],
    [channelNames.egressRetrySkipped, (m) => events.skipped.push(m as EgressRetrySkippedMessage)],
  ]
  for (const [name, fn] of subs) diagnostics.subscribe(name, fn)
  events.stop = () => {
    for (const [name, fn] of subs) diagnostics.unsubscribe(name, fn)
  }
  return events
}

/** The system clock, counting timers that are set and not yet fired or cleared. */
export class CountingClock implements Clock {
  pending = 0
  readonly #live = new Set<unknown>()
  now(): number {
    return systemClock.now()
  }
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): unknown {
    const handle: unknown = systemClock.setTimeout(
      () => {
        this.#live.delete(handle)
        this.pending = this.#live.size
        callback()
      },
      ms,
      options,
    )
    this.#live.add(handle)
    this.pending = this.#live.size
    return handle
  }
  clearTimeout(handle: unknown): void {
    systemClock.clearTimeout(handle)
    this.#live.delete(handle)
    this.pending = this.#live.size
  }
}

/** Await a promise that must reject, and return what it rejected with. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection, got a value')
}
