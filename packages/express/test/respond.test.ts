import { isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type DeadlineMiddlewareOptions,
  deadline,
  expressChannels,
  type IngressEndMessage,
  type IngressExpireMessage,
  type IngressLateWriteMessage,
} from '../src/index.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * `respond`: the app writes the answer to a request whose time ran out, in
 * its own error shape (an API's), instead of the plain 504 — and the request
 * is still deadline()'s expiry: the expire event (with its stage), `expired`
 * at the end, late writes swallowed. Before it, an app that wanted its own
 * shape for a budget spent on arrival had to refuse the request ahead of
 * deadline(), which then published nothing for it at all.
 */
describe.each(majors)('deadline({ respond }) ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  const stops: Array<() => void> = []
  afterEach(async () => {
    for (const stop of stops.splice(0)) stop()
    await server?.close()
    server = undefined
  })

  function channels() {
    const expired = record<IngressExpireMessage>(expressChannels.expire.name)
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    stops.push(expired.stop, ended.stop)
    return { expired, ended }
  }

  /** An API's error shape, and what `respond` was given. */
  function apiShape() {
    const calls: { errorIsDeadline: boolean; headersSent: boolean }[] = []
    const respond: NonNullable<DeadlineMiddlewareOptions['respond']> = (_req, res, error) => {
      calls.push({ errorIsDeadline: isDeadlineExceeded(error), headersSent: res.headersSent })
      res.status(504).json({ error: { code: 'deadline_exceeded', type: 'timeout' } })
    }
    return { respond, calls }
  }

  it('on arrival: its answer, not the plain 504; published as an arrival expiry; the handler never runs', async () => {
    const { respond, calls } = apiShape()
    const app = major.app()
    const handled: string[] = []
    app.use(deadline({ reserveMs: 10, respond }))
    app.get('/', (_req, res) => {
      handled.push('handler')
      res.json({ ok: true })
    })
    server = await listen(app)
    const { expired, ended } = channels()
    const res = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': '1' },
      dispatcher: agent,
    })
    expect(res.statusCode).toBe(504)
    expect(await res.body.json()).toEqual({
      error: { code: 'deadline_exceeded', type: 'timeout' },
    })
    await ended.count(1)
    expect(calls).toEqual([{ errorIsDeadline: true, headersSent: false }])
    expect(handled).toEqual([])
    expect(expired.messages.map((m) => [m.stage, m.action, m.budgetMs])).toEqual([
      ['arrival', '504', 1],
    ])
    expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
  })

  it("when the handler's deadline ends before it answered: its answer; the handler's late writes are swallowed", async () => {
    const { respond, calls } = apiShape()
    const clock = new ManualClock()
    const app = major.app()
    const entered = deferred()
    const late = deferred<IngressLateWriteMessage>()
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock, respond, onLateWrite: late.resolve }))
    app.get(
      '/',
      major.route(async (req, res) => {
        entered.resolve()
        await new Promise((resolve) => req.deadline.signal.addEventListener('abort', resolve))
        res.json({ late: true })
      }),
    )
    server = await listen(app)
    const { expired, ended } = channels()
    const answer = request(server.url, { dispatcher: agent })
    await entered.promise
    clock.advance(990)
    const res = await answer
    expect(res.statusCode).toBe(504)
    expect(await res.body.json()).toEqual({
      error: { code: 'deadline_exceeded', type: 'timeout' },
    })
    expect((await late.promise).method).toBe('json')
    await ended.count(1)
    expect(calls).toEqual([{ errorIsDeadline: true, headersSent: false }])
    expect(expired.messages.map((m) => [m.stage, m.action])).toEqual([['handler', '504']])
    expect(ended.messages.map((m) => m.outcome)).toEqual(['expired'])
  })

  it('its answer carries none of the headers the handler set for its own body: not typed text/event-stream, not gzip, not a download', async () => {
    const { respond } = apiShape()
    const clock = new ManualClock()
    const app = major.app()
    const entered = deferred()
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock, respond }))
    app.get('/', (_req, res) => {
      // Set for the stream it meant to send, then waiting on a first token.
      res.setHeader('content-type', 'text/event-stream')
      res.setHeader('content-encoding', 'gzip')
      res.setHeader('content-disposition', 'attachment; filename="events.txt"')
      res.setHeader('etag', '"v1"')
      res.setHeader('cache-control', 'public, max-age=3600')
      res.setHeader('expires', 'Thu, 01 Jan 2099 00:00:00 GMT')
      res.setHeader('x-kept', 'yes')
      entered.resolve()
    })
    server = await listen(app)
    const answer = request(server.url, { dispatcher: agent })
    await entered.promise
    clock.advance(990)
    const res = await answer
    expect(res.statusCode).toBe(504)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    // Not cached for the next callers as the body the handler meant to send.
    for (const name of ['content-encoding', 'content-disposition', 'cache-control', 'expires']) {
      expect(res.headers[name], name).toBeUndefined()
    }
    expect(res.headers.etag).not.toBe('"v1"')
    expect(res.headers['x-kept']).toBe('yes')
    expect(await res.body.json()).toEqual({
      error: { code: 'deadline_exceeded', type: 'timeout' },
    })
  })
  it('a response already started is ended as without it: respond is not called', async () => {
    const { respond, calls } = apiShape()
    const clock = new ManualClock()
    const app = major.app()
    const entered = deferred()
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock, respond }))
    app.get('/', (_req, res) => {
      res.setHeader('content-type', 'text/plain')
      res.write('partial ')
      entered.resolve()
    })
    server = await listen(app)
    const { expired } = channels()
    const res = await request(server.url, { dispatcher: agent })
    await entered.promise
    clock.advance(990)
    expect(res.statusCode).toBe(200)
    expect(await res.body.text()).toBe('partial ')
    expect(calls).toEqual([])
    expect(expired.messages.map((m) => [m.stage, m.action])).toEqual([['handler', 'ended']])
  })

  it('a respond that leaves the response unended: the plain 504 goes out, the request is answered all the same', async () => {
    const app = major.app()
    app.use(
      deadline({
        reserveMs: 10,
        respond: (_req, res) => {
          res.setHeader('x-tried', '1')
        },
      }),
    )
    app.get('/', (_req, res) => res.json({ ok: true }))
    server = await listen(app)
    const { expired } = channels()
    const res = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': '0' },
      dispatcher: agent,
    })
    expect(res.statusCode).toBe(504)
    expect(res.headers['x-deadline-expired']).toBe('1')
    expect(await res.body.json()).toMatchObject({ error: 'deadline_exceeded' })
    expect(expired.messages.map((m) => [m.stage, m.action])).toEqual([['arrival', '504']])
  })

  it('observe mode writes nothing, so respond is never called', async () => {
    const { respond, calls } = apiShape()
    const app = major.app()
    app.use(deadline({ reserveMs: 10, mode: 'observe', respond }))
    app.get('/', (_req, res) => res.json({ ok: true }))
    server = await listen(app)
    const { expired } = channels()
    const res = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': '1' },
      dispatcher: agent,
    })
    expect(res.statusCode).toBe(200)
    expect(await res.body.json()).toEqual({ ok: true })
    expect(calls).toEqual([])
    expect(expired.messages.map((m) => [m.stage, m.action])).toEqual([['arrival', 'observed']])
  })
})

describe('deadline({ respond }) options', () => {
  it('refuses a respond that is not a function when created, not on the first expiry', () => {
    expect(() =>
      deadline({ respond: 'json' as unknown as DeadlineMiddlewareOptions['respond'] }),
    ).toThrow(/^respond must be a function, got string$/)
  })
})
