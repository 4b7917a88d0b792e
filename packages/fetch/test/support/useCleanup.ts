import { afterEach } from 'vitest'
import { type EgressEvents, recordEgress } from '../helpers.js'

/** What a test opens and must close: a server, a fetch, an Agent. */
export interface Closable {
  close(): Promise<void> | void
}

/**
 * The teardown every egress test spells out: what it opened closed, and
 * its event recorder stopped, after each test. `keep(x)` returns `x`;
 * `record()` starts a recorder stopped with the rest.
 */
export function useCleanup(): {
  keep<T extends Closable>(closable: T): T
  record(): EgressEvents
} {
  let closers: Closable[] = []
  let recorders: EgressEvents[] = []
  afterEach(async () => {
    for (const events of recorders) events.stop()
    recorders = []
    await Promise.all(closers.map((c) => c.close()))
    closers = []
  })
  return {
    keep(closable) {
      closers.push(closable)
      return closable
    },
    record() {
      const events = recordEgress()
      recorders.push(events)
      return events
    },
  }
}
