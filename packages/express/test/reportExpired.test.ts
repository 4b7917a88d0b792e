import { isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  expressChannels,
  type IngressClientClosedMessage,
  type IngressEndMessage,
  type IngressExpireMessage,
  reportExpired,
} from '../src/index.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * An app that answers a request's deadline itself (its own 504 body, a
 * stream's error event, a connection it cuts) says so with `reportExpired`:
 * the request then ends `expired`, not `ok`, and its expiry is published as
 * one of deadline()'s own would be — what a tracer or a metric reads.
 */
describe.each(majors)('reportExpired ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  function recordings() {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    const expired = record<IngressExpireMessage>(expressChannels.expire.name)
    const left = record<IngressClientClosedMessage>(expressChannels.clientClosed.name)
    return {
      ended,
      expired,
      left,
      stop() {
        ended.stop()
        expired.stop()
        left.stop()
      },
    }
  }

  it("ends the request expired around the app's own 504, untouched, and publishes the expiry (action app)", async () => {
    const app = major.app()
    const hooked: IngressExpireMessage[] = []
    const seen = deferred<{ signal: AbortSignal; reported: boolean }>()
    app.use(
      deadline({ clock: new ManualClock(), defaultMs: 10_000, onExpire: (m) => hooked.push(m) }),
    )
    app.post('/', (req, res) => {
      res
        .status(504)
        .set('x-deadline-expired', '1')
        .json({ error: { code: 'deadline_exceeded' } })
      seen.resolve({ signal: req.deadline.signal, reported: reportExpired(req) })
    })
    server = await listen(app)
    const events = recordings()
    try {
      const answer = await request(server.url, { method: 'POST', dispatcher: agent })
      expect(answer.statusCode).toBe(504)
      expect(await answer.body.json()).toEqual({ error: { code: 'deadline_exceeded' } })
      const { signal, reported } = await seen.promise
      expect(reported).toBe(true)
      await events.ended.count(1)
      expect(events.ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([
        ['expired', 504],
      ])
      expect(events.expired.messages.map((m) => [m.stage, m.action, m.budgetMs])).toEqual([
        ['handler', 'app', 10_000],
      ])
      expect(hooked.map((m) => m.action)).toEqual(['app'])
      // Whatever still runs for it stops, told why.
      expect(signal.aborted).toBe(true)
      expect(isDeadlineExceeded(signal.reason)).toBe(true)
    } finally {
      events.stop()
    }
  })

  it("names the plan's running slice, or the one the app gives", async () => {
    const app = major.app()
    app.use(deadline({ clock: new ManualClock(), defaultMs: 10_000, plan: { model: 1 } }))
    app.get('/running', (req, res) => {
      req.plan?.slice('model')
      res.status(504).end()
      reportExpired(req)
    })
    app.get('/given', (req, res) => {
      res.status(504).end()
      reportExpired(req, { slice: 'write' })
    })
    server = await listen(app)
    const events = recordings()
    try {
      await (await request(`${server.url}/running`, { dispatcher: agent })).body.dump()
      await (await request(`${server.url}/given`, { dispatcher: agent })).body.dump()
      await events.ended.count(2)
      expect(events.expired.messages.map((m) => m.slice)).toEqual(['model', 'write'])
    } finally {
      events.stop()
    }
  })

  it("names the running slice of a plan the route made (req.deadline.plan), in the timer's 504 too", async () => {
    // Only deadline({ plan })'s plan was consulted: a route that made its
    // own (the README's way to plan some routes only) got `slice: null`.
    const clock = new ManualClock()
    const app = major.app()
    app.use(deadline({ clock, defaultMs: 1000, reserveMs: 10 }))
    const started = deferred()
    app.get('/timer', async (req) => {
      const plan = req.deadline.plan({ fetch: 1, model: 3 })
      await plan.run('fetch', async () => {})
      // A step that ignores its slice's signal: still running at the 504.
      plan.slice('model')
      started.resolve()
    })
    app.get('/app', (req, res) => {
      req.deadline.plan({ model: 1 }).slice('model')
      res.status(504).end()
      reportExpired(req)
    })
    server = await listen(app)
    const events = recordings()
    try {
      const pending = request(`${server.url}/timer`, { dispatcher: agent })
      await started.promise
      clock.advance(1000)
      const answer = await pending
      expect(answer.statusCode).toBe(504)
      expect(await answer.body.json()).toMatchObject({ slice: 'model' })
      await (await request(`${server.url}/app`, { dispatcher: agent })).body.dump()
      await events.ended.count(2)
      expect(events.expired.messages.map((m) => [m.action, m.slice])).toEqual([
        ['504', 'model'],
        ['app', 'model'],
      ])
    } finally {
      events.stop()
    }
  })

  it('ends a stream the app closed with its own error event expired, not ok', async () => {
    const app = major.app()
    app.use(deadline({ clock: new ManualClock(), defaultMs: 10_000 }))
    app.get('/', (req, res) => {
      res.setHeader('content-type', 'text/event-stream')
      res.write('data: {"n":1}\n\n')
      res.write('data: {"error":{"code":"deadline_exceeded"}}\n\n')
      reportExpired(req)
      res.end()
    })
    server = await listen(app)
    const events = recordings()
    try {
      const answer = await request(server.url, { dispatcher: agent })
      expect(answer.statusCode).toBe(200)
      expect(await answer.body.text()).toContain('deadline_exceeded')
      await events.ended.count(1)
      expect(events.ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([
        ['expired', 200],
      ])
      expect(events.expired.messages.map((m) => m.action)).toEqual(['app'])
    } finally {
      events.stop()
    }
  })

  it('ends a stream the app cut (closing its connection) expired, not client-closed', async () => {
    const app = major.app()
    app.use(deadline({ clock: new ManualClock(), defaultMs: 10_000 }))
    app.get('/', (req, res) => {
      res.setHeader('content-type', 'text/event-stream')
      res.write('data: {"n":1}\n\n', () => {
        reportExpired(req)
        req.socket.destroy()
      })
    })
    server = await listen(app)
    const events = recordings()
    try {
      const answer = await request(server.url, { dispatcher: agent })
      await expect(answer.body.text()).rejects.toThrow()
      await events.ended.count(1)
      expect(events.ended.messages.map((m) => m.outcome)).toEqual(['expired'])
      expect(events.expired.messages.map((m) => m.action)).toEqual(['app'])
      expect(events.left.messages).toEqual([])
    } finally {
      events.stop()
    }
  })

  it('counts in observe mode too: the app enforced it', async () => {
    const app = major.app()
    const seen = deferred<AbortSignal>()
    app.use(deadline({ clock: new ManualClock(), defaultMs: 10_000, mode: 'observe' }))
    app.get('/', (req, res) => {
      res.status(504).end()
      reportExpired(req)
      seen.resolve(req.deadline.signal)
    })
    server = await listen(app)
    const events = recordings()
    try {
      await (await request(server.url, { dispatcher: agent })).body.dump()
      await events.ended.count(1)
      expect(events.ended.messages.map((m) => m.outcome)).toEqual(['expired'])
      expect(events.expired.messages.map((m) => m.action)).toEqual(['app'])
      expect((await seen.promise).aborted).toBe(true)
    } finally {
      events.stop()
    }
  })

  it('does nothing without deadline(), after deadline() answered, or once the response is over', async () => {
    const app = major.app()
    const clock = new ManualClock()
    const results: Record<string, boolean> = {}
    app.get('/bare', (req, res) => {
      results['bare'] = reportExpired(req)
      res.end()
    })
    app.use(deadline({ clock, defaultMs: 1000, reserveMs: 0 }))
    app.get('/late', (req, _res) => {
      clock.advance(1000) // deadline() answers its 504 now
      results['late'] = reportExpired(req)
    })
    app.get('/over', (req, res) => {
      res.on('finish', () => {
        results['over'] = reportExpired(req)
      })
      res.end('done')
    })
    server = await listen(app)
    const events = recordings()
    try {
      const bare = await request(`${server.url}/bare`, { dispatcher: agent })
      await bare.body.dump()
      const late = await request(`${server.url}/late`, { dispatcher: agent })
      expect(late.statusCode).toBe(504)
      await late.body.dump()
      const over = await request(`${server.url}/over`, { dispatcher: agent })
      expect(await over.body.text()).toBe('done')
      await events.ended.count(2)
      expect(results).toEqual({ bare: false, late: false, over: false })
      expect(events.ended.messages.map((m) => m.outcome)).toEqual(['expired', 'ok'])
      // Only deadline()'s own expiry.
      expect(events.expired.messages.map((m) => m.action)).toEqual(['504'])
    } finally {
      events.stop()
    }
  })
})
