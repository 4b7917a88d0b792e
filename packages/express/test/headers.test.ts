import diagnostics from 'node:diagnostics_channel'
import {
  currentDeadline,
  ManualClock,
  recordAnswerLateness,
  resetTimerLateness,
} from '@hourglass/core'
import type { NextFunction, Request, Response } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type DeadlineMiddlewareOptions,
  deadline,
  expressChannels,
  type IngressEndMessage,
  type IngressInvalidHeaderMessage,
  type IngressStartMessage,
} from '../src/index.js'
import { client, listen, majors, type Running, record } from './support/servers.js'

describe.each(majors)('inbound deadline headers ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  /** A server whose handler reports what it was given; time stands still (ManualClock). */
  async function serve(options: DeadlineMiddlewareOptions = {}) {
    const app = major.app()
    const calls: string[] = []
    app.use(deadline({ clock: new ManualClock(), ...options }))
    app.get('/', (req, res) => {
      calls.push(req.url)
      res.json({
        remainingMs: req.deadline.remaining(),
        inContext: currentDeadline() === req.deadline,
      })
    })
    server = await listen(app)
    return { url: server.url, calls }
  }

  async function get(url: string, headers: Record<string, string> | string[] = {}) {
    const starts = record<IngressStartMessage>(expressChannels.start.name)
    const invalids = record<IngressInvalidHeaderMessage>(expressChannels.invalidHeader.name)
    try {
      const res = await request(url, { headers, dispatcher: agent })
      const body = (await res.body.json()) as Record<string, unknown>
      return {
        status: res.statusCode,
        body,
        start: starts.messages[0],
        invalid: invalids.messages[0],
      }
    } finally {
      starts.stop()
      invalids.stop()
    }
  }

  it('without a header a request gets defaultMs, and the handler reserveMs less, as its current deadline', async () => {
    const { url } = await serve({ defaultMs: 1500, reserveMs: 10 })
    const got = await get(url)
    expect(got.status).toBe(200)
    expect(got.body).toEqual({ remainingMs: 1490, inContext: true })
    expect(got.start).toMatchObject({
      budgetMs: 1500,
      source: 'default',
      clamped: false,
      mode: 'enforce',
      refused: false,
    })
  })

  it('on a ManualClock the default reserve is the floor (10 ms), whatever load this process has seen', async () => {
    // Late 504s on the real clock raise the adaptive reserve (to ~82 ms here):
    // that is the real clock's lateness, not the test clock's, whose 504s
    // must fall where the test puts them.
    for (let i = 0; i < 8; i++) recordAnswerLateness(80)
    try {
      const { url } = await serve({ defaultMs: 1500 })
      expect((await get(url)).body).toEqual({ remainingMs: 1490, inContext: true })
    } finally {
      resetTimerLateness()
    }
  })

  it.each([
    [{ 'x-deadline-remaining-ms': '800' }, 800, 'x-deadline-remaining-ms'],
    [{ 'grpc-timeout': '2S' }, 2000, 'grpc-timeout'],
    [{ 'grpc-timeout': '750m' }, 750, 'grpc-timeout'],
    [{ 'grpc-timeout': '1500000u' }, 1500, 'grpc-timeout'],
    [{ 'grpc-timeout': '99999999n' }, 99, 'grpc-timeout'],
    [{ 'x-envoy-expected-rq-timeout-ms': '900' }, 900, 'x-envoy-expected-rq-timeout-ms'],
    [
      {
        'x-deadline-remaining-ms': '800',
        'grpc-timeout': '500m',
        'x-envoy-expected-rq-timeout-ms': '900',
      },
      500,
      'grpc-timeout',
    ],
    [
      {
        'x-deadline-remaining-ms': '300',
        'grpc-timeout': '1S',
        'x-envoy-expected-rq-timeout-ms': '900',
      },
      300,
      'x-deadline-remaining-ms',
    ],
  ])(
    'reads %j as a %i ms budget (smallest valid value wins)',
    async (headers, budgetMs, source) => {
      const { url } = await serve({ defaultMs: 5000, reserveMs: 10 })
      const got = await get(url, headers)
      expect(got.status).toBe(200)
      expect(got.body.remainingMs).toBe(budgetMs - 10)
      expect(got.start).toMatchObject({ budgetMs, source, clamped: false })
      expect(got.invalid).toBeUndefined()
    },
  )

  it('a caller can shorten its request but never lengthen it beyond maxMs', async () => {
    const { url } = await serve({ defaultMs: 2000, maxMs: 10_000, reserveMs: 0 })
    const longer = await get(url, { 'x-deadline-remaining-ms': '60000' })
    expect(longer.body.remainingMs).toBe(10_000)
    expect(longer.start).toMatchObject({ budgetMs: 10_000, clamped: true })
    const hours = await get(url, { 'grpc-timeout': '2H' })
    expect(hours.body.remainingMs).toBe(10_000)
    const shorter = await get(url, { 'x-deadline-remaining-ms': '700' })
    expect(shorter.body.remainingMs).toBe(700)
    // Well-formed but past 2^31-1 ms (grpc-js sends a 30-day deadline as
    // `2592000S`): a longer deadline than any, so clamped — it used to be
    // refused as invalid, and the caller got the shorter defaultMs.
    const far = await get(url, { 'x-deadline-remaining-ms': '3000000000' })
    expect(far.body.remainingMs).toBe(10_000)
    expect(far.start).toMatchObject({ budgetMs: 10_000, clamped: true })
    expect(far.invalid).toBeUndefined()
    // However many digits: eleven were refused as 'too long' while ten were clamped.
    const farther = await get(url, { 'x-deadline-remaining-ms': '99999999999' })
    expect(farther.body.remainingMs).toBe(10_000)
    expect(farther.start).toMatchObject({ budgetMs: 10_000, clamped: true })
    expect(farther.invalid).toBeUndefined()
    const farGrpc = await get(url, { 'grpc-timeout': '99999999H' })
    expect(farGrpc.body.remainingMs).toBe(10_000)
    expect(farGrpc.invalid).toBeUndefined()
  })

  it('mounted twice (app and router), the outer deadline() owns the request', async () => {
    const app = major.app()
    const clock = new ManualClock()
    app.use(deadline({ clock, defaultMs: 1000, reserveMs: 0 }))
    app.use(deadline({ clock, defaultMs: 50, reserveMs: 0 }))
    app.get('/', (req, res) => {
      res.json({ remainingMs: req.deadline.remaining() })
    })
    server = await listen(app)
    const got = await get(server.url)
    expect(got.body).toEqual({ remainingMs: 1000 })
  })

  it('a defaultMs above maxMs is cut to maxMs', async () => {
    const { url } = await serve({ defaultMs: 60_000, maxMs: 3000, reserveMs: 0 })
    expect((await get(url)).body.remainingMs).toBe(3000)
  })

  it('a defaultMs above the default maxMs, with no maxMs given, is the budget: the cap follows it up', async () => {
    // Before, `{ defaultMs: 60_000 }` (a model route) silently got 30 s.
    const { url } = await serve({ defaultMs: 60_000, reserveMs: 0 })
    const none = await get(url)
    expect(none.body.remainingMs).toBe(60_000)
    expect(none.start).toMatchObject({ budgetMs: 60_000 })
    // A caller may ask for what a caller without a header gets, no more.
    const longer = await get(url, { 'x-deadline-remaining-ms': '90000' })
    expect(longer.start).toMatchObject({ budgetMs: 60_000, clamped: true })
    const shorter = await get(url, { 'x-deadline-remaining-ms': '45000' })
    expect(shorter.body.remainingMs).toBe(45_000)
    // Below the default cap nothing changes: a caller still gets up to 30 s.
    await server?.close()
    const { url: small } = await serve({ defaultMs: 2000, reserveMs: 0 })
    const capped = await get(small, { 'x-deadline-remaining-ms': '90000' })
    expect(capped.start).toMatchObject({ budgetMs: 30_000, clamped: true })
  })

  it('trust: [] ignores every inbound deadline header', async () => {
    const { url } = await serve({ defaultMs: 1000, reserveMs: 0, trust: [] })
    const got = await get(url, {
      'x-deadline-remaining-ms': '100',
      'grpc-timeout': '100m',
      'x-envoy-expected-rq-timeout-ms': '100',
    })
    expect(got.body.remainingMs).toBe(1000)
    expect(got.start).toMatchObject({ source: 'default' })
  })

  it('trust lists the only headers believed', async () => {
    const { url } = await serve({ defaultMs: 1000, reserveMs: 0, trust: ['grpc-timeout'] })
    const got = await get(url, { 'x-deadline-remaining-ms': '100', 'grpc-timeout': '400m' })
    expect(got.body.remainingMs).toBe(400)
    // An untrusted header is not even parsed, so its malformation is nobody's business.
    const ignored = await get(url, { 'x-deadline-remaining-ms': 'soon' })
    expect(ignored.invalid).toBeUndefined()
    expect(ignored.body.remainingMs).toBe(1000)
  })

  const malformed: Array<[string, Record<string, string> | string[], string, string]> = [
    ['a lone minus', { 'x-deadline-remaining-ms': '-' }, 'x-deadline-remaining-ms', 'not a number'],
    [
      'exponent on our own header',
      { 'x-deadline-remaining-ms': '1.5e3' },
      'x-deadline-remaining-ms',
      'not a number',
    ],
    ['empty', { 'x-deadline-remaining-ms': '' }, 'x-deadline-remaining-ms', 'empty'],
    [
      'non-numeric',
      { 'x-deadline-remaining-ms': 'soon' },
      'x-deadline-remaining-ms',
      'not a number',
    ],
    [
      'exponent',
      { 'x-envoy-expected-rq-timeout-ms': '1e3' },
      'x-envoy-expected-rq-timeout-ms',
      'not a number',
    ],
    [
      'comma-joined',
      { 'x-deadline-remaining-ms': '100, 200' },
      'x-deadline-remaining-ms',
      'repeated header (comma-joined values)',
    ],
    [
      'sent twice',
      ['x-deadline-remaining-ms', '100', 'x-deadline-remaining-ms', '200'],
      'x-deadline-remaining-ms',
      'repeated header (comma-joined values)',
    ],
    [
      'grpc lowercase unit',
      { 'grpc-timeout': '5h' },
      'grpc-timeout',
      'not a grpc-timeout (1-8 digits and H, M, S, m, u or n)',
    ],
    [
      'grpc no unit',
      { 'grpc-timeout': '100' },
      'grpc-timeout',
      'not a grpc-timeout (1-8 digits and H, M, S, m, u or n)',
    ],
    ['grpc nine digits', { 'grpc-timeout': '123456789m' }, 'grpc-timeout', 'more than 8 digits'],
  ]

  it.each(malformed)(
    'a %s value falls back to defaultMs and is reported',
    async (_, headers, header, reason) => {
      const seen: IngressInvalidHeaderMessage[] = []
      const { url, calls } = await serve({
        defaultMs: 1200,
        reserveMs: 0,
        onInvalidHeader: (event) => seen.push(event),
      })
      const got = await get(url, headers)
      expect(got.status).toBe(200)
      expect(got.body.remainingMs).toBe(1200)
      expect(got.start).toMatchObject({ budgetMs: 1200, source: 'default' })
      expect(seen).toHaveLength(1)
      expect(seen[0]?.invalid).toEqual([expect.objectContaining({ header, reason })])
      expect(got.invalid?.invalid).toEqual(seen[0]?.invalid)
      expect(got.invalid?.req).toBe(got.start?.req)
      expect(calls).toHaveLength(1)
    },
  )

  it('a malformed header next to a valid one: the valid one counts, the malformed one is reported', async () => {
    const { url } = await serve({ defaultMs: 5000, reserveMs: 0 })
    const got = await get(url, { 'x-deadline-remaining-ms': 'abc', 'grpc-timeout': '250m' })
    expect(got.body.remainingMs).toBe(250)
    expect(got.invalid?.invalid.map((i) => i.header)).toEqual(['x-deadline-remaining-ms'])
  })

  it.each(malformed)(
    'strict: a %s value is answered 400 with a JSON reason; the handler never runs',
    async (_, headers, header, reason) => {
      const { url, calls } = await serve({ strict: true })
      const got = await get(url, headers)
      expect(got.status).toBe(400)
      expect(got.body).toEqual({ error: 'invalid_deadline_header', invalid: [{ header, reason }] })
      expect(got.start).toMatchObject({ source: 'default', req: got.invalid?.req })
      expect(calls).toHaveLength(0)
    },
  )

  it('a refusal that cannot be written (a middleware ahead already sent headers) still releases its deadline and ends the request', async () => {
    const app = major.app()
    const clock = new ManualClock()
    const errors: unknown[] = []
    app.use((_req, res, next) => {
      res.writeHead(200)
      next()
    })
    app.use(deadline({ strict: true, clock, defaultMs: 600, reserveMs: 0 }))
    app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
      errors.push(error)
      res.end()
    })
    server = await listen(app)
    const ends = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const res = await request(server.url, {
        headers: { 'x-deadline-remaining-ms': 'soon' },
        dispatcher: agent,
      })
      await res.body.dump()
      // Express passed the writer's error on, as for any middleware that throws.
      expect(errors).toEqual([expect.objectContaining({ code: 'ERR_HTTP_HEADERS_SENT' })])
      expect(ends.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['refused', 200]])
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ends.stop()
    }
  })

  it('a request strict refuses publishes its start and end like any other: outcome refused, 400, its timer released at once', async () => {
    const app = major.app()
    const clock = new ManualClock()
    let nextRan = false
    app.use(deadline({ strict: true, clock, defaultMs: 600, reserveMs: 0, plan: { work: 1 } }))
    app.use((_req, res) => {
      nextRan = true
      res.json({})
    })
    server = await listen(app)
    const invalids = record<IngressInvalidHeaderMessage>(expressChannels.invalidHeader.name)
    const starts = record<IngressStartMessage>(expressChannels.start.name)
    const ends = record<IngressEndMessage>(expressChannels.end.name)
    const order: string[] = []
    const seen = (name: string) => () => order.push(name)
    const onInvalid = seen('invalid-header')
    const onStart = seen('start')
    const onEnd = seen('end')
    diagnostics.subscribe(expressChannels.invalidHeader.name, onInvalid)
    diagnostics.subscribe(expressChannels.start.name, onStart)
    diagnostics.subscribe(expressChannels.end.name, onEnd)
    try {
      const res = await request(server.url, {
        headers: { 'x-deadline-remaining-ms': '1.5e3' },
        dispatcher: agent,
      })
      expect(res.statusCode).toBe(400)
      await res.body.json()
      // All three before the 400 reached the caller: a tracer has the span's
      // reason (the header), its start and its end while the span is open.
      expect(order).toEqual(['invalid-header', 'start', 'end'])
      expect(starts.messages[0]).toMatchObject({
        budgetMs: 600,
        source: 'default',
        mode: 'enforce',
        refused: true,
      })
      expect(ends.messages).toHaveLength(1)
      expect(ends.messages[0]).toMatchObject({ statusCode: 400, outcome: 'refused' })
      expect(ends.messages[0]?.deadline).toBe(starts.messages[0]?.deadline)
      expect(ends.messages[0]?.req).toBe(invalids.messages[0]?.req)
      // Released, not aborted: nothing was started on the request's behalf.
      expect(clock.pendingTimers).toBe(0)
      expect(ends.messages[0]?.deadline.done).toBe(false)
      expect(nextRan).toBe(false)
    } finally {
      invalids.stop()
      starts.stop()
      ends.stop()
      diagnostics.unsubscribe(expressChannels.invalidHeader.name, onInvalid)
      diagnostics.unsubscribe(expressChannels.start.name, onStart)
      diagnostics.unsubscribe(expressChannels.end.name, onEnd)
    }
  })

  it("strict: a refused request's start says the budget it would have run with, a valid header's beside the malformed one", async () => {
    const { url, calls } = await serve({ strict: true, defaultMs: 600, reserveMs: 0 })
    const got = await get(url, { 'x-deadline-remaining-ms': 'abc', 'grpc-timeout': '250m' })
    expect(got.status).toBe(400)
    expect(got.start).toMatchObject({ budgetMs: 250, source: 'grpc-timeout', refused: true })
    expect(calls).toHaveLength(0)
  })
})
