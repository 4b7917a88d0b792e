import { connect } from 'node:net'
import {
  DEADLINE_HEADER,
  DeadlineExceededError,
  isDeadlineExceeded,
  ManualClock,
  writeDeadline,
} from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  deadlineErrors,
  type IngressEndMessage,
  type IngressExpireMessage,
} from '../src/index.js'
import {
  aborted,
  client,
  deferred,
  listen,
  majors,
  type Running,
  record,
} from './support/servers.js'

describe.each(majors)("mode: 'observe' ($name)", (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('computes and propagates the deadline, reports the request that would have been cut, and lets it finish', async () => {
    // A manual clock, moved past the deadline once the handler has propagated
    // it: what is propagated is the budget less the reserve, not less however
    // long a loaded machine took to reach the handler (5 ms were left once).
    const clock = new ManualClock()
    const app = major.app()
    const expired: IngressExpireMessage[] = []
    const reported = deferred()
    const propagated = deferred()
    app.use(
      deadline({
        clock,
        mode: 'observe',
        reserveMs: 10,
        onExpire: (event) => {
          expired.push(event)
          reported.resolve()
        },
      }),
    )
    app.get(
      '/',
      major.route(async (req, res) => {
        const outbound: Record<string, string> = {}
        writeDeadline(outbound, req.deadline)
        propagated.resolve()
        // Outlive the deadline: the report comes, the handler carries on.
        await reported.promise
        res.json({ propagated: outbound[DEADLINE_HEADER], aborted: req.deadline.signal.aborted })
      }),
    )
    server = await listen(app)
    const answer = request(server.url, {
      headers: { 'x-deadline-remaining-ms': '80' },
      dispatcher: agent,
    })
    await propagated.promise
    clock.advance(80)
    const res = await answer
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-deadline-expired']).toBeUndefined()
    const body = (await res.body.json()) as { propagated: string; aborted: boolean }
    expect(body.aborted).toBe(false)
    expect(Number(body.propagated)).toBeGreaterThan(40)
    expect(Number(body.propagated)).toBeLessThanOrEqual(70)
    expect(expired).toEqual([
      expect.objectContaining({ stage: 'handler', action: 'observed', budgetMs: 80 }),
    ])
    expect(expired[0]?.elapsedMs).toBeGreaterThanOrEqual(69)
  })

  it.each(['enforce', 'observe'] as const)(
    'mode %s: the 504 deadlineErrors() writes for a relayed downstream expiry is reported as one (expire event, end outcome expired)',
    async (mode) => {
      // The README's main example: the model service answered 504
      // x-deadline-expired, and the route throws its DeadlineExceededError.
      // That 504 goes out in dark mode too: before, observe mode published no
      // expire event and ended the request `ok` with statusCode 504, so its
      // numbers missed every such 504 enforce mode counts.
      const expired: IngressExpireMessage[] = []
      const ended = record<IngressEndMessage>('hourglass:ingress:end')
      try {
        const app = major.app()
        app.use(
          deadline({ clock: new ManualClock(), mode, onExpire: (event) => expired.push(event) }),
        )
        app.get(
          '/',
          major.route(async () => {
            throw new DeadlineExceededError({ budgetMs: 700, elapsedMs: 700, slice: 'model' })
          }),
        )
        app.use(deadlineErrors())
        server = await listen(app)
        const res = await request(server.url, { dispatcher: agent })
        expect(res.statusCode).toBe(504)
        expect(await res.body.json()).toMatchObject({ error: 'deadline_exceeded', slice: 'model' })
        await ended.count(1)
        expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
        expect(expired).toEqual([
          expect.objectContaining({ stage: 'handler', action: '504', slice: 'model' }),
        ])
      } finally {
        ended.stop()
      }
    },
  )

  it("observe mode: deadlineErrors() reports no expiry for a client whose FIN came first (its response's close still on its way): client-closed, as enforce mode ends it", async () => {
    const expired: IngressExpireMessage[] = []
    const ended = record<IngressEndMessage>('hourglass:ingress:end')
    try {
      const app = major.app()
      app.use(
        deadline({
          clock: new ManualClock(),
          mode: 'observe',
          onExpire: (event) => expired.push(event),
        }),
      )
      app.get('/', (req, _res, next) => {
        // The caller half-closes; Node ends the socket at once (no
        // httpAllowHalfOpen), the response's 'close' a loop turn later.
        // Meanwhile the relayed downstream expiry reaches deadlineErrors().
        req.socket.once('end', () =>
          next(new DeadlineExceededError({ budgetMs: 700, elapsedMs: 700, slice: 'model' })),
        )
        req.socket.resume()
      })
      app.use(deadlineErrors())
      server = await listen(app)
      const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
      socket.on('error', () => {})
      socket.resume()
      socket.end('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
      await ended.count(1)
      socket.destroy()
      expect(ended.messages.map((m) => m.outcome)).toEqual(['client-closed'])
      expect(expired).toEqual([])
    } finally {
      ended.stop()
    }
  })

  it.each(['enforce', 'observe'] as const)(
    "mode %s: once deadlineErrors() has answered a relayed expiry, the request's deadline is cancelled and the work still running under it stops",
    async (mode) => {
      // The 504 is out: whatever still runs for it is waste. Left running in
      // dark mode, it held the request's server span open (otel waits for the
      // work of a request that did not end `ok`) until that work ended on its
      // own: 600 ms past a 63 ms answer.
      const ended = record<IngressEndMessage>('hourglass:ingress:end')
      const seen = deferred<{ signal: AbortSignal; stopped: Promise<void> }>()
      try {
        const app = major.app()
        app.use(deadline({ clock: new ManualClock(), mode }))
        app.get(
          '/',
          major.route(async (req) => {
            // A slice of the work still running beside the downstream call that failed.
            const slice = req.deadline.child(60_000)
            seen.resolve({ signal: req.deadline.signal, stopped: aborted(slice.signal) })
            throw new DeadlineExceededError({ budgetMs: 700, elapsedMs: 700, slice: 'model' })
          }),
        )
        app.use(deadlineErrors())
        server = await listen(app)
        const res = await request(server.url, { dispatcher: agent })
        expect(res.statusCode).toBe(504)
        await res.body.dump()
        await ended.count(1)
        const { signal, stopped } = await seen.promise
        expect(signal.aborted).toBe(true)
        expect(isDeadlineExceeded(signal.reason)).toBe(true)
        await stopped
        expect(ended.messages.map((m) => m.outcome)).toEqual(['expired'])
      } finally {
        ended.stop()
      }
    },
  )

  it.each([
    ['enforce', '504'],
    ['observe', 'observed'],
  ] as const)(
    'mode %s: a request whose own time ran out before the route threw its relayed expiry is one expiry (action %s), not two',
    async (mode, action) => {
      // Enforce mode answers at the deadline and swallows the later throw:
      // one event. Dark mode reported the expiry when it came (`observed`)
      // and, before, a second one for the 504 deadlineErrors() then wrote:
      // one request counted twice in otel's exceeded counter.
      const clock = new ManualClock()
      const expired: IngressExpireMessage[] = []
      const ended = record<IngressEndMessage>('hourglass:ingress:end')
      const inRoute = deferred()
      const reported = deferred()
      const handled = deferred()
      try {
        const app = major.app()
        app.use(
          deadline({
            clock,
            mode,
            defaultMs: 100,
            reserveMs: 0,
            onExpire: (event) => {
              expired.push(event)
              reported.resolve()
            },
          }),
        )
        app.get(
          '/',
          major.route(async () => {
            inRoute.resolve()
            await reported.promise
            throw new DeadlineExceededError({ budgetMs: 700, elapsedMs: 700, slice: 'model' })
          }),
        )
        app.use((error: unknown, _req: unknown, _res: unknown, next: (e: unknown) => void) => {
          handled.resolve()
          next(error)
        })
        app.use(deadlineErrors())
        server = await listen(app)
        const answer = request(server.url, { dispatcher: agent })
        await inRoute.promise
        clock.advance(100)
        const res = await answer
        expect(res.statusCode).toBe(504)
        await res.body.dump()
        await handled.promise
        await ended.count(1)
        expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
        expect(expired).toEqual([expect.objectContaining({ stage: 'handler', action })])
      } finally {
        ended.stop()
      }
    },
  )

  it("observe mode: deadlineErrors() under an older copy's deadline() (no answerObserved) still answers 504", async () => {
    // Two installed copies share requests (a Symbol.for key): the app's
    // deadlineErrors() may meet an IngressRequest of a copy older than the
    // method. It threw a TypeError there, and the caller got a 500.
    const app = major.app()
    app.use(deadline({ clock: new ManualClock(), mode: 'observe' }))
    app.use((req, _res, next) => {
      const ingress = (req.deadline as unknown as Record<symbol, Record<string, unknown>>)[
        Symbol.for('@hourglass/express.ingress.v1')
      ]
      if (ingress) ingress.answerObserved = undefined
      next()
    })
    app.get(
      '/',
      major.route(async () => {
        throw new DeadlineExceededError({ budgetMs: 700, elapsedMs: 700, slice: 'model' })
      }),
    )
    app.use(deadlineErrors())
    server = await listen(app)
    const res = await request(server.url, { dispatcher: agent })
    expect(res.statusCode).toBe(504)
    expect(await res.body.json()).toMatchObject({ error: 'deadline_exceeded', slice: 'model' })
  })
})
