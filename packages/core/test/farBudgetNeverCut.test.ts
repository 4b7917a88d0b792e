import {
  Deadline,
  MAX_TIMER_MS,
  ManualClock,
  readDeadline,
  remainingMs,
  resolveIngressOptions,
  runWithDeadline,
  wait,
  writeDeadline,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'

const DAY = 86_400_000

// The rule for budgets past Node's timer limit (2^31-1 ms, ~24.8 days):
// never cut locally — what a deadline reads is what it enforces — and cut
// to the limit only on the wire, where the result says so.
describe('a budget past 2^31-1 ms', () => {
  it('a Deadline keeps all of it: budgetMs, remaining(), remainingMs(), and its expiry', async () => {
    const clock = new ManualClock()
    const d = Deadline.after(30 * DAY, { clock })
    expect([d.budgetMs, d.remaining()]).toEqual([30 * DAY, 30 * DAY])
    await runWithDeadline(d, async () => {
      await null
      expect(remainingMs()).toBe(30 * DAY)
    })
    clock.advance(MAX_TIMER_MS)
    // Its timer fired at the limit and re-armed for the rest: not expired early.
    expect([d.expired, d.done, d.remaining()]).toEqual([false, false, 30 * DAY - MAX_TIMER_MS])
    expect(clock.pendingTimers).toBe(1)
    clock.advance(30 * DAY - MAX_TIMER_MS - 1)
    expect(d.done).toBe(false)
    clock.advance(1)
    expect([d.expired, d.done, clock.pendingTimers]).toEqual([true, true, 0])
  })

  it('a wait and a fixed slice keep all of it too', async () => {
    const clock = new ManualClock()
    let result: string | undefined
    void wait(30 * DAY, { clock }).then((r) => {
      result = r
    })
    clock.advance(30 * DAY - 1)
    await null
    expect(result).toBeUndefined()
    clock.advance(1)
    await new Promise((r) => setImmediate(r))
    expect(result).toBe('timer')
    const plan = Deadline.never({ clock }).plan({ job: { ms: 30 * DAY } }, { reserveMs: 0 })
    expect(plan.allotment('job')).toBe(30 * DAY)
  })

  it('the wire carries at most the limit, and the reader says it cut', () => {
    const d = Deadline.after(30 * DAY, { clock: new ManualClock() })
    const headers: Record<string, string> = {}
    expect(writeDeadline(headers, d)).toBe(MAX_TIMER_MS)
    expect(readDeadline(headers, { maxMs: Infinity })).toMatchObject({
      ms: MAX_TIMER_MS,
      clamped: false,
    })
    expect(readDeadline({ 'grpc-timeout': '720H' }, { maxMs: Infinity })).toMatchObject({
      ms: MAX_TIMER_MS,
      clamped: true,
    })
  })

  it("an ingress's maxMs and defaultMs past it are cut to it, and read so", () => {
    const resolved = resolveIngressOptions({ defaultMs: 30 * DAY })
    expect([resolved.maxMs, resolved.defaultMs]).toEqual([MAX_TIMER_MS, MAX_TIMER_MS])
  })
})
