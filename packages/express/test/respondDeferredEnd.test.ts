import type { Socket } from 'node:net'
import { Readable } from 'node:stream'
import { ManualClock } from '@hourglass/core'
import type { Response } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import {
  type DeadlineMiddlewareOptions,
  deadline,
  deadlineErrors,
  expressChannels,
  type IngressEndMessage,
} from '../src/index.js'
import { deferredEnd } from './support/deferredEnd.js'
import { pipelined, pipelinedGet } from './support/pipelined.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * `respond` behind a middleware whose `res.end` finishes later
 * (express-session saving the session: `deferredEnd`). `respond` has ended
 * its answer when it returns, but the response is not `writableEnded` yet:
 * taken for an answer left unended, the plain 504 was written over it,
 * found it started with a length, and destroyed the socket — the caller got
 * no answer at all ("other side closed"), on every expiry of a
 * session-using app.
 */
describe.each(majors)(
  'respond behind a middleware that ends the response later ($name)',
  (major) => {
    let server: Running | undefined
    const agent = client({ connections: 1 })
    afterEach(async () => {
      await server?.close()
      server = undefined
    })

    const respond: NonNullable<DeadlineMiddlewareOptions['respond']> = (_req, res) => {
      res.status(504).json({ error: { code: 'deadline_exceeded' } })
    }

    it.each([
      ['its own timer', false],
      ['deadlineErrors()', true],
    ])(
      'its answer goes out whole, the connection kept (answered by %s)',
      async (_by, viaErrors) => {
        const clock = new ManualClock()
        const ended = record<IngressEndMessage>(expressChannels.end.name)
        try {
          const app = major.app()
          const entered = deferred()
          app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock, respond }))
          app.use(deferredEnd('answers'))
          app.get(
            '/',
            major.route(async (req) => {
              entered.resolve()
              if (!viaErrors) return new Promise(() => {})
              const step = req.deadline.child(100, { name: 'model' })
              await new Promise((resolve) => step.signal.addEventListener('abort', resolve))
              throw step.reason
            }),
          )
          app.get('/next', (_req, res) => {
            res.json({ next: true })
          })
          app.use(deadlineErrors())
          server = await listen(app)
          // The caller's budget (defaultMs's size): its 504 says it is gone.
          const answer = request(server.url, {
            dispatcher: agent,
            headers: { 'x-deadline-remaining-ms': '1000' },
          })
          await entered.promise
          clock.advance(viaErrors ? 100 : 990)
          const res = await answer
          expect(res.statusCode).toBe(504)
          expect(await res.body.json()).toEqual({ error: { code: 'deadline_exceeded' } })
          expect(res.headers['x-deadline-expired']).toBe('1')
          await ended.count(1)
          expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
          const next = await request(`${server.url}/next`, { dispatcher: agent })
          expect(await next.body.json()).toEqual({ next: true })
          expect(server.connections).toHaveLength(1)
        } finally {
          ended.stop()
        }
      },
    )

    it('queued behind a pipelined answer: its answer, complete while it waits, goes out whole when its turn comes', async () => {
      const clock = new ManualClock()
      const ended = record<IngressEndMessage>(expressChannels.end.name)
      const sockets: Socket[] = []
      onTestFinished(() => {
        for (const socket of sockets) socket.destroy()
        ended.stop()
      })
      const gate = deferred()
      const handled = deferred<Response>()
      const app = major.app()
      const answers = deferredEnd('answers')
      app.use((req, res, next) => (req.path === '/next' ? answers(req, res, next) : next()))
      app.use(deadline({ defaultMs: 10_000, reserveMs: 10, clock, respond }))
      app.get('/first', (_req, res) => {
        res.write('a')
        void gate.promise.then(() => res.end('b'))
      })
      app.get('/next', (_req, res) => handled.resolve(res))
      server = await listen(app)
      const connection = await pipelined(
        server,
        pipelinedGet('/first') + pipelinedGet('/next', 200),
        sockets,
      )
      const res = await handled.promise
      clock.advance(190) // /next's deadline: respond's answer, queued behind /first
      await new Promise<void>((resolve) => setImmediate(resolve)) // the store answers
      expect([res.writableEnded, res.socket]).toEqual([true, null])
      clock.advance(1000)
      // Before, the grace destroyed it here, complete but waiting its turn:
      // Node then destroyed the shared connection, and it never arrived.
      expect(res.destroyed).toBe(false)
      gate.resolve()
      await ended.count(2)
      const text = await connection.text()
      expect(text).toContain('{"error":{"code":"deadline_exceeded"}}')
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([
        ['ok', 200],
        ['expired', 504],
      ])
      expect(clock.pendingTimers).toBe(0)
    })

    it('a stream with a length piped in behind such a middleware is cut at once, its source stopped', async () => {
      const clock = new ManualClock()
      const source = new Readable({ read() {} })
      const wrote = deferred()
      const app = major.app()
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      app.use(deferredEnd('never'))
      app.get('/', (_req, res) => {
        res.setHeader('content-length', 10)
        source.pipe(res)
        source.push('12345')
        setImmediate(() => wrote.resolve())
      })
      server = await listen(app)
      const res = await request(server.url, { dispatcher: agent })
      await wrote.promise
      const body = res.body.text()
      clock.advance(990)
      await expect(body).rejects.toThrow()
      expect(source.destroyed).toBe(true)
    })

    it('a respond whose end throws ended nothing: the plain 504 goes out, the throw is rethrown', async () => {
      const uncaught: unknown[] = []
      const onUncaught = (error: unknown) => uncaught.push(error)
      process.on('uncaughtException', onUncaught)
      onTestFinished(() => {
        process.off('uncaughtException', onUncaught)
      })
      const clock = new ManualClock()
      const app = major.app()
      const entered = deferred()
      app.use(
        deadline({
          defaultMs: 1000,
          reserveMs: 10,
          clock,
          // A status passed where the body goes: Node throws ERR_INVALID_ARG_TYPE.
          respond: (_req, res) => res.end(504 as unknown as string),
        }),
      )
      app.get('/', () => entered.resolve())
      server = await listen(app)
      const answer = request(server.url, { dispatcher: agent })
      await entered.promise
      clock.advance(990)
      const res = await answer
      expect(res.statusCode).toBe(504)
      expect(await res.body.json()).toMatchObject({ error: 'deadline_exceeded' })
      await new Promise<void>((resolve) => process.nextTick(resolve))
      expect(uncaught).toMatchObject([{ code: 'ERR_INVALID_ARG_TYPE' }])
    })
  },
)
