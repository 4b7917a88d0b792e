import { ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it, vi } from 'vitest'
import * as one from '../src/index.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

// Two installed copies of this package in one app: the app's own
// `deadline()`, and a library's router that mounts the `deadline()` of the
// copy it depends on (@hourglass/gateway pins its version: an app on
// another one has two). Mounted twice, the outer one owns the request and
// the inner one steps aside (README) — across copies too. Before, the
// inner copy did not see the outer one's request: it made a second
// deadline of its own budget (60 s here) in `req.deadline`, so the work
// went on past the outer one's 504 (its signal never aborted), the request
// was announced twice, and the app's `reportExpired` found no request.
vi.resetModules()
const two = (await import('../src/index.js')) as typeof one

describe.each(majors)('deadline() of two installed copies, app and router ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('is a second module instance (the premise)', () => {
    expect(two.deadline).not.toBe(one.deadline)
  })

  it("the outer one owns the request: its budget, its signal aborted at its 504, one start; the inner copy's reportExpired finds it", async () => {
    const clock = new ManualClock()
    const app = major.app()
    app.use(one.deadline({ clock, defaultMs: 300, reserveMs: 0 }))
    const router = major.app()
    router.use(two.deadline({ clock, defaultMs: 60_000, reserveMs: 0 }))
    const seen = deferred<{ budgetMs: number; aborted: boolean; reported: boolean }>()
    router.get('/v1/work', (req, _res) => {
      const { deadline } = req
      clock.advance(300) // the outer deadline: its 504
      seen.resolve({
        budgetMs: deadline.budgetMs,
        aborted: deadline.signal.aborted,
        reported: two.reportExpired(req), // after the 504: nothing left to report
      })
    })
    app.use(router)
    const starts = record<one.IngressStartMessage>(one.expressChannels.start.name)
    const ends = record<one.IngressEndMessage>(one.expressChannels.end.name)
    try {
      server = await listen(app)
      const answer = await request(`${server.url}/v1/work`, { dispatcher: client() })
      expect(answer.statusCode).toBe(504)
      expect(await answer.body.json()).toMatchObject({ budgetMs: 300, elapsedMs: 300 })
      expect(await seen.promise).toEqual({ budgetMs: 300, aborted: true, reported: false })
      await ends.count(1)
      expect(starts.messages.map((m) => m.budgetMs)).toEqual([300])
      expect(ends.messages.map((m) => m.outcome)).toEqual(['expired'])
      expect(clock.pendingTimers).toBe(0)
    } finally {
      starts.stop()
      ends.stop()
    }
  })

  it("the app's own answer to its deadline, reported through the other copy, ends the request expired", async () => {
    const clock = new ManualClock()
    const app = major.app()
    app.use(one.deadline({ clock, defaultMs: 300, reserveMs: 0 }))
    const router = major.app()
    router.use(two.deadline({ clock, defaultMs: 60_000, reserveMs: 0 }))
    router.get('/v1/work', (req, res) => {
      res.status(504).json({ error: { code: 'too_slow' } })
      expect(two.reportExpired(req)).toBe(true)
    })
    app.use(router)
    const ends = record<one.IngressEndMessage>(one.expressChannels.end.name)
    try {
      server = await listen(app)
      const answer = await request(`${server.url}/v1/work`, { dispatcher: client() })
      expect(answer.statusCode).toBe(504)
      await answer.body.dump()
      await ends.count(1)
      expect(ends.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
    } finally {
      ends.stop()
    }
  })
})
