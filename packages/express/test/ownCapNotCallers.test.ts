import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import {
  callersBudget,
  type DeadlineMiddlewareOptions,
  deadline,
  deadlineErrors,
} from '../src/index.js'
import { deferred, listen, majors, type Running } from './support/servers.js'

// The wire says a 504 with `x-deadline-expired: 1` is the caller's budget
// gone too: a caller that sees it does not retry. A cap of the server's own
// is not that: `maxMs` below what the caller sent, or `defaultMs` for a
// request that sent none. Marked, a caller with 5 s cut at 200 ms by `maxMs`
// gave up with 4.8 s left (@hourglass/fetch: `upstream-deadline`, no retry).
// Now that 504 goes without it (`x-should-retry: false` stays, for the SDKs
// that retry with no budget), and a caller may retry with what it has left.

// One major: the rule is deadline()'s own, the same under Express 4 (its
// 504 is written the same way: sdkNoRetry.test.ts runs both).
const major = majors[0]

describe("a server's own cap is not the caller's expiry", () => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  /** A server whose first request hangs and whose later ones answer at once; the caller retries a 504. */
  async function hangOnce(options: DeadlineMiddlewareOptions) {
    const clock = new ManualClock()
    const entered = deferred()
    let calls = 0
    const app = major.app()
    app.use(deadline({ clock, reserveMs: 10, ...options }))
    app.get('/', (_req, res) => {
      calls++
      if (calls === 1) entered.resolve()
      else res.json({ calls })
    })
    server = await listen(app)
    const fetch = createFetch({ retry: { statuses: [504] } })
    onTestFinished(() => fetch.close())
    return { clock, entered: entered.promise, fetch, url: server.url, calls: () => calls }
  }

  it('maxMs below what the caller sent: the 504 has no x-deadline-expired, and createFetch retries it within its budget', async () => {
    const { clock, entered, fetch, url, calls } = await hangOnce({ maxMs: 200 })
    const request = Deadline.after(5000)
    onTestFinished(() => request.dispose())
    const answer = runWithDeadline(request, () => fetch(url))
    await entered
    clock.advance(190)
    const res = await answer
    expect([res.status, await res.json(), calls()]).toEqual([200, { calls: 2 }, 2])
  })

  it('defaultMs, the caller sent no deadline: the 504 has no x-deadline-expired, x-should-retry: false', async () => {
    const { clock, entered, url } = await hangOnce({ defaultMs: 200 })
    const answer = globalThis.fetch(url)
    await entered
    clock.advance(190)
    const res = await answer
    expect([
      res.status,
      res.headers.get('x-deadline-expired'),
      res.headers.get('x-should-retry'),
    ]).toEqual([504, null, 'false'])
    expect(await res.json()).toEqual({
      error: 'deadline_exceeded',
      budgetMs: 200,
      elapsedMs: 190,
      slice: null,
    })
  })

  it("respond's answer to a cap of its own goes without x-deadline-expired, even one the handler set", async () => {
    const clock = new ManualClock()
    const entered = deferred()
    const app = major.app()
    app.use(
      deadline({
        clock,
        defaultMs: 200,
        reserveMs: 10,
        respond: (_req, res) => {
          res.status(504).json({ code: 'too_slow' })
        },
      }),
    )
    app.get('/', (_req, res) => {
      // Meant for an answer of its own it never gave.
      res.setHeader('x-deadline-expired', '1')
      entered.resolve()
    })
    server = await listen(app)
    const answer = globalThis.fetch(server.url)
    await entered.promise
    clock.advance(190)
    const res = await answer
    expect([
      res.status,
      res.headers.get('x-deadline-expired'),
      res.headers.get('x-should-retry'),
      await res.json(),
    ]).toEqual([504, null, 'false', { code: 'too_slow' }])
  })

  it('callersBudget(req) says whose the budget is: the header sent, not a cap of the server', async () => {
    const app = major.app()
    app.get('/none', (req, res) => {
      res.json({ callers: callersBudget(req) ?? 'no deadline()' })
    })
    app.use(deadline({ defaultMs: 1000, maxMs: 2000 }))
    app.get('/', (req, res) => {
      res.json({ callers: callersBudget(req) })
    })
    server = await listen(app)
    const ask = async (path: string, budget?: string) => {
      const headers: Record<string, string> =
        budget === undefined ? {} : { 'x-deadline-remaining-ms': budget }
      const res = await globalThis.fetch(`${server!.url}${path}`, { headers })
      return ((await res.json()) as { callers: unknown }).callers
    }
    expect([
      await ask('/', '1500'),
      await ask('/', '5000'),
      await ask('/'),
      await ask('/none', '1500'),
    ]).toEqual([true, false, false, 'no deadline()'])
  })

  it("the caller's own budget running out: x-deadline-expired: 1, and createFetch does not retry", async () => {
    const { clock, entered, fetch, url, calls } = await hangOnce({})
    const request = Deadline.after(5000)
    onTestFinished(() => request.dispose())
    const answer = runWithDeadline(request, () => fetch(url))
    await entered
    clock.advance(5000)
    const res = await answer
    expect([res.status, res.headers.get('x-deadline-expired'), calls()]).toEqual([504, '1', 1])
    await res.body?.cancel()
  })

  it.each([
    { mode: 'enforce' as const, left: 4890, marked: '1' },
    { mode: 'observe' as const, left: 4890, marked: '1' },
    { mode: 'enforce' as const, left: 50, marked: '1' },
  ])(
    "a child's expiry with $left ms of the caller's left ($mode): deadlineErrors() marks the 504 — a cap under the caller's budget is the request's division of it, as a slice is",
    async ({ mode, left, marked }) => {
      const clock = new ManualClock()
      const app = major.app()
      app.use(deadline({ clock, reserveMs: 10, mode }))
      app.get('/', (req, res, next) => {
        // A cap made under the request's: a lookup given 100 ms of it.
        // Enforcing even under an observing deadline(): the app's own cap.
        const lookup = req.deadline.child(Math.min(100, req.deadline.remaining()), {
          observe: false,
        })
        lookup.signal.addEventListener('abort', () => next(lookup.reason), { once: true })
        res.on('close', () => lookup.dispose())
        setImmediate(() => clock.advance(100))
      })
      app.use(deadlineErrors())
      server = await listen(app)
      const res = await globalThis.fetch(server.url, {
        headers: { 'x-deadline-remaining-ms': String(left + 110) },
      })
      expect([
        res.status,
        res.headers.get('x-deadline-expired'),
        res.headers.get('x-should-retry'),
      ]).toEqual([504, marked, 'false'])
      await res.body?.cancel()
    },
  )
})
