import { AsyncLocalStorage } from 'node:async_hooks'
import {
  currentDeadline,
  currentRequestId,
  Deadline,
  ManualClock,
  runWithDeadline,
  runWithRequestId,
} from '@hourglass/core'
import { expect, it } from 'vitest'

// Node's timers run their callback in the async context they were set in: a
// deadline made inside a request calls its onExpire (an Express `respond`
// writing the request id into the 504, a log line, an abort listener's
// cleanup) under that request. A ManualClock ran every timer in the context
// of whoever called `advance()` — the test's, or another request's: the 504
// of a test said `requestId: null` where production said `req-42`, and a
// context leak (a timer armed in the wrong request) was hidden, not shown.

it("runs a timer in the context it was set in, not advance()'s", () => {
  const clock = new ManualClock()
  const other = new AsyncLocalStorage<string>() // OpenTelemetry's context manager is one
  const seen: unknown[] = []
  const owner = Deadline.never({ clock })
  runWithRequestId('request-A', () =>
    runWithDeadline(owner, () =>
      other.run('otel-A', () =>
        clock.setTimeout(
          () => seen.push([currentRequestId(), currentDeadline() === owner, other.getStore()]),
          10,
        ),
      ),
    ),
  )
  runWithRequestId('request-B', () => other.run('otel-B', () => clock.advance(10)))
  expect(seen).toEqual([['request-A', true, 'otel-A']])
})

it("calls a deadline's onExpire and onDone in the context the deadline was made in", () => {
  const clock = new ManualClock()
  const seen: unknown[] = []
  const deadline = runWithRequestId('request-A', () =>
    Deadline.after(10, { clock, onExpire: () => seen.push(['onExpire', currentRequestId()]) }),
  )
  runWithRequestId('request-A', () =>
    deadline.onDone(() => seen.push(['onDone', currentRequestId()])),
  )
  clock.advance(10) // outside any request, as a test drives time
  expect(seen).toEqual([
    ['onExpire', 'request-A'],
    ['onDone', 'request-A'],
  ])
})

it('keeps that context for a far timer (past 2^31-1 ms, one whole timer)', () => {
  const clock = new ManualClock()
  const seen: unknown[] = []
  runWithRequestId('request-A', () =>
    Deadline.after(30 * 24 * 3600_000, { clock, onExpire: () => seen.push(currentRequestId()) }),
  )
  clock.advance(30 * 24 * 3600_000)
  expect(seen).toEqual(['request-A'])
})
