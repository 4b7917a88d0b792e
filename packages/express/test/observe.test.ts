import { connect } from 'node:net'
import { DEADLINE_HEADER, DeadlineExceededError, ManualClock, writeDeadline } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  deadlineErrors,
  type IngressEndMessage,
  type IngressExpireMessage,
} from '../src/index.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

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
})
