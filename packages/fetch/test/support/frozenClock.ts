import { type Clock, systemClock } from '@hourglass/core'

/**
 * A clock that stands still, on real timers: every failure measures 0 ms.
 * A refused connect takes well under 1 ms on loopback, but two busy cores
 * can report it 50 ms or more after it began: then it counts as slow
 * (`FAST_CONNECT_FAILURE_MS`) and is never retried (`slow-connect-failure`).
 * Tests about a failure *measured* as fast read time from this clock. Its
 * time never moves: a phase limit or a deadline on it never ends, so a
 * regression that leaves a call hanging fails at the test's timeout.
 */
export const frozenClock: Clock = {
  now: () => 0,
  setTimeout: systemClock.setTimeout,
  clearTimeout: systemClock.clearTimeout,
}
