import { type Clock, ManualClock, type TimerOptions } from '@hourglass/core'
import { type ProviderDialect, reply } from '@hourglass/testkit'
import { APIError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A ManualClock whose `stall(ms)` is an event loop blocked for `ms`: the
 * time passes first, then the timers due in it run, each late. A deadline
 * whose timer then finds its parent's time passed too lets the parent go
 * first (core's rule: a server's answer before what its child aborts).
 */
class StallingClock implements Clock {
  readonly #manual = new ManualClock()
  #floor = Number.NEGATIVE_INFINITY
  now(): number {
    return Math.max(this.#manual.now(), this.#floor)
  }
  setTimeout(callback: () => void, ms: number, _options?: TimerOptions): unknown {
    return this.#manual.setTimeout(callback, ms)
  }
  clearTimeout(handle: unknown): void {
    this.#manual.clearTimeout(handle)
  }
  /** Both deadlines at once, in due order (the handler's first): a late loop turn. */
  advance(ms: number): void {
    this.#manual.advance(ms)
  }
  stall(ms: number): void {
    this.#floor = this.#manual.now() + ms
    this.#manual.advance(ms)
    this.#floor = Number.NEGATIVE_INFINITY
  }
}

/**
 * The handler's deadline ends `replyReserveMs` before the ingress
 * middleware's backstop, so the stream's `deadline_exceeded` error event is
 * written first — once the aborted call has unwound, a few promise hops
 * later. After an event-loop stall (a GC pause, a starved CPU) the backstop
 * runs before that: in the same turn, or first of all when both were due
 * when the loop came back. It can only end a started stream, and ended
 * cleanly the official client read the cut answer — no error, no `[DONE]`,
 * no `finish_reason` — as a complete one.
 */
describe('a stream whose deadline the ingress backstop ends', () => {
  let harness: Harness | undefined
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => {
    await harness?.close()
    harness = undefined
    await Promise.all(closers.splice(0).map((close) => close()))
  })

  // `replyReserveMs: 0` leaves the started stream's end to the backstop: the README's way.
  const cases: Array<[ProviderDialect, 'advance' | 'stall', replyReserveMs?: number]> = [
    ['openai', 'advance'],
    ['anthropic', 'advance'],
    ['gemini', 'advance'],
    ['openai', 'stall'],
    ['anthropic', 'stall'],
    ['openai', 'advance', 0],
  ]
  for (const [dialect, how, replyReserveMs] of cases) {
    const when =
      replyReserveMs === 0
        ? 'alone (replyReserveMs 0)'
        : how === 'advance'
          ? 'in the turn of its own'
          : 'first, after a stall'
    it(`${when} still ends with the deadline_exceeded error event the client throws (${dialect})`, async () => {
      const { fake, entry } = await fakeProvider(dialect, ['k'])
      closers.push(() => fake.close())
      // The first token at once, the next never within the test.
      fake.setReply(reply.text('Hello there, slowly', { tokenDelayMs: 600_000 }))
      const clock = new StallingClock()
      harness = await startHarness(
        {
          providers: { p: entry },
          models: { m: fallback(['p', 'model-x']) },
          deadline: { defaultMs: 60_000, reserveMs: 10 },
        },
        replyReserveMs === undefined ? { clock } : { clock, replyReserveMs },
      )
      const stream = await harness.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      })
      let text = ''
      let finish: string | null | undefined
      let moved = false
      const error = await (async () => {
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? ''
          finish ??= chunk.choices[0]?.finish_reason
          if (moved) continue
          // The stream is under way: both deadlines (59,965 and 59,990 ms) in one step.
          moved = true
          clock[how](60_000)
        }
      })().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(text).toBe('Hello')
      expect(finish).toBeNull()
      expect(error).toBeInstanceOf(APIError)
      expect(error).toMatchObject({ code: 'deadline_exceeded', type: 'server_error' })
      await expect.poll(() => harness?.logs.some((r) => r['event'] === 'request')).toBe(true)
      expect(harness.logs.find((r) => r['event'] === 'request')).toMatchObject({
        status: 200,
        error: 'deadline_exceeded',
      })
      expect(harness.logs.filter((r) => r['event'] === 'stream-interrupted')).toHaveLength(1)
    })
  }
})
