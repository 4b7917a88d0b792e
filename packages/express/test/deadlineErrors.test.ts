import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { type AddressInfo, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  ClientClosedError,
  Deadline,
  DeadlineExceededError,
  guard,
  isClientClosed,
  ManualClock,
  markExpiryOf,
} from '@hourglass/core'
import express, { type ErrorRequestHandler } from 'express'
import express4 from 'express4'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import {
  aborted,
  client,
  deferred,
  listen,
  majors,
  type Running,
  record,
} from './support/servers.js'

describe.each(majors)('deadlineErrors() ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  /** An app whose user error handler (after deadlineErrors) records what reaches it and answers 500. */
  async function serve(mount: (app: ReturnType<typeof major.app>) => void, withDeadline = true) {
    const app = major.app()
    const passedOn: unknown[] = []
    if (withDeadline) {
      app.use(deadline({ reserveMs: 10, plan: { preprocess: 0.2, model: 0.7, write: 0.1 } }))
    }
    mount(app)
    app.use(deadlineErrors())
    const userHandler: ErrorRequestHandler = (error, _req, res, _next) => {
      passedOn.push(error)
      res.status(500).json({ error: 'internal' })
    }
    app.use(userHandler)
    server = await listen(app)
    return { url: server.url, passedOn }
  }

  async function get(url: string, headers: Record<string, string> = {}) {
    const res = await request(url, { headers, dispatcher: agent })
    const text = await res.body.text()
    return { status: res.statusCode, headers: res.headers, text, body: JSON.parse(text) as unknown }
  }

  it('maps a slice running out to 504 with the slice named and x-deadline-expired: 1', async () => {
    // A manual clock, moved 1 ms at a time once the model step runs: the
    // elapsed time is where the slice ends, not how late a busy machine's
    // timer fired (a real clock's 504 came at 285+ ms under load).
    const clock = new ManualClock()
    const modelStarted = deferred()
    const { url, passedOn } = await serve((app) => {
      app.use(deadline({ clock, reserveMs: 10, plan: { preprocess: 0.2, model: 0.7, write: 0.1 } }))
      app.get(
        '/',
        major.route(async (req, res) => {
          await req.plan?.run('preprocess', async () => {})
          // The model step ignores its signal; run() gives up at the slice's end anyway.
          await req.plan?.run('model', () => {
            modelStarted.resolve()
            return new Promise(() => {})
          })
          res.json({ never: true })
        }),
      )
    }, false)
    let answered = false
    const pending = get(url, { 'x-deadline-remaining-ms': '300' }).finally(() => {
      answered = true
    })
    await modelStarted.promise
    for (let ms = 0; !answered && ms < 400; ms++) {
      clock.advance(1)
      await new Promise((resolve) => setImmediate(resolve))
    }
    const got = await pending
    expect(got.status).toBe(504)
    expect(got.headers['x-deadline-expired']).toBe('1')
    expect(got.body).toEqual({
      error: 'deadline_exceeded',
      budgetMs: 300,
      elapsedMs: expect.any(Number),
      slice: 'model',
    })
    // It answered when the slice ran out, well before the request's own 504 (290 ms).
    expect((got.body as { elapsedMs: number }).elapsedMs).toBeLessThan(285)
    expect(passedOn).toEqual([])
  })

  it.each([
    ["its deadline's reason (what a client under it rejects with)", true],
    ['one the app made once its client left', false],
  ])(
    'answers nothing for the ClientClosedError of a request whose client left, %s, and passes nothing on',
    async (_name, deadlineReason) => {
      const started = deferred()
      const judged = deferred<unknown>()
      const { url, passedOn } = await serve((app) => {
        app.get(
          '/',
          major.route(async (req) => {
            started.resolve()
            await aborted(req.deadline.signal)
            throw deadlineReason ? req.deadline.reason : new ClientClosedError()
          }),
        )
        // Hands it to deadlineErrors(); once that returns, it has been judged.
        app.use(((error, _req, _res, next) => {
          next(error)
          judged.resolve(error)
        }) as ErrorRequestHandler)
      })
      const controller = new AbortController()
      const call = request(url, { dispatcher: agent, signal: controller.signal })
      await started.promise
      controller.abort()
      await expect(call).rejects.toThrow()
      expect(isClientClosed(await judged.promise)).toBe(true)
      expect(passedOn).toEqual([])
    },
  )

  it('passes on a ClientClosedError that is not its own while its client is still there: the app answers it', async () => {
    const { url, passedOn } = await serve((app) => {
      app.get('/', (_req, _res, next) => {
        // Another request's, from work it shared with this one (see deadlineErrorsForeignClientClosed.test.ts).
        next(new ClientClosedError())
      })
    })
    const got = await get(url)
    expect(got.status).toBe(500)
    expect(passedOn).toHaveLength(1)
    expect(isClientClosed(passedOn[0])).toBe(true)
  })

  it('passes every other error on, untouched', async () => {
    const secret = new Error('db password=hunter2 at 10.0.0.7')
    const { url, passedOn } = await serve((app) => {
      app.get('/', () => {
        throw secret
      })
    })
    const got = await get(url)
    expect(got.status).toBe(500)
    expect(passedOn).toEqual([secret])
  })

  it('swallows the abort a handler hits after the deadline answered; bodies carry no message or stack', async () => {
    const { url, passedOn } = await serve((app) => {
      app.get(
        '/',
        major.route(async (req) => {
          await aborted(req.deadline.signal)
          const abort = new Error('This operation was aborted at /srv/app/handler.js:42')
          abort.name = 'AbortError'
          throw abort
        }),
      )
    })
    const got = await get(url, { 'x-deadline-remaining-ms': '50' })
    expect(got.status).toBe(504)
    expect(Object.keys(got.body as object).sort()).toEqual([
      'budgetMs',
      'elapsedMs',
      'error',
      'slice',
    ])
    expect(got.text).not.toMatch(/aborted|handler\.js|at |Error/)
    // Give the rejected handler its turn before looking: it must not have reached the user handler.
    const next = await request(`${url}/missing`, { dispatcher: agent })
    await next.body.dump()
    expect(next.statusCode).toBe(404)
    expect(passedOn).toEqual([])
  })

  /**
   * The official OpenAI client against a provider that never answers (its
   * call ends only by its signal), called by the route `/` with the
   * request's deadline signal; `calling` resolves once the call is made,
   * `thrown` with what the route rejects with.
   */
  async function serveHungOpenAI() {
    const hung = createServer(() => {})
    hung.listen(0, '127.0.0.1')
    await once(hung, 'listening')
    const { port } = hung.address() as AddressInfo
    const { default: OpenAI } = await import('openai')
    const openai = new OpenAI({
      baseURL: `http://127.0.0.1:${port}/v1`,
      apiKey: 'sk-test',
      maxRetries: 0,
    })
    const calling = deferred()
    const thrown = deferred<unknown>()
    const served = await serve((app) => {
      app.get(
        '/',
        major.route(async (req) => {
          try {
            const call = openai.chat.completions.create(
              { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] },
              { signal: req.deadline.signal },
            )
            calling.resolve()
            await call
          } catch (error) {
            thrown.resolve(error)
            throw error
          }
        }),
      )
    })
    /** What the route threw reached deadlineErrors() and nothing was passed on (asked after it, on the next request). */
    const passedOnNothing = async () => {
      expect(((await thrown.promise) as object).constructor.name).toBe('APIUserAbortError')
      const next = await request(`${served.url}/missing`, { dispatcher: agent })
      await next.body.dump()
      expect(next.statusCode).toBe(404)
      expect(served.passedOn).toEqual([])
    }
    const close = () => {
      hung.closeAllConnections()
      hung.close()
    }
    return { url: served.url, calling, passedOnNothing, close }
  }

  it("swallows the official OpenAI client's APIUserAbortError, thrown for the deadline's signal after the 504 (named neither AbortError nor ABORT_ERR)", async () => {
    const hung = await serveHungOpenAI()
    try {
      const got = await get(hung.url, { 'x-deadline-remaining-ms': '50' })
      expect(got.status).toBe(504)
      await hung.passedOnNothing()
    } finally {
      hung.close()
    }
  })

  it("passes on no APIUserAbortError of the official OpenAI client when the request's client left mid-call (the SDK drops the signal's reason)", async () => {
    const hung = await serveHungOpenAI()
    try {
      const client = new AbortController()
      const left = request(hung.url, { dispatcher: agent, signal: client.signal }).catch(
        () => 'left',
      )
      await hung.calling.promise
      client.abort()
      expect(await left).toBe('left')
      await hung.passedOnNothing()
    } finally {
      hung.close()
    }
  })

  it("passes on an abort of the app's own, with its own error as cause, though the request's client has left", async () => {
    const reached = deferred()
    const { url, passedOn } = await serve((app) => {
      app.get(
        '/',
        major.route(async (req) => {
          reached.resolve()
          await aborted(req.deadline.signal)
          const mine = new AbortController()
          mine.abort(new Error('cache schema mismatch'))
          await sleep(1, undefined, { signal: mine.signal })
        }),
      )
    })
    const client = new AbortController()
    const gone = request(url, { dispatcher: agent, signal: client.signal }).catch(() => 'left')
    await reached.promise
    client.abort()
    expect(await gone).toBe('left')
    await expect.poll(() => passedOn.length).toBe(1)
    expect(passedOn[0]).toMatchObject({
      name: 'AbortError',
      cause: { message: 'cache schema mismatch' },
    })
  })

  it("answers nothing for the AbortError Node's own APIs throw when the client left (its cause a ClientClosedError), and passes nothing on", async () => {
    const started = deferred()
    const judged = deferred<unknown>()
    const { url, passedOn } = await serve((app) => {
      app.get(
        '/',
        major.route(async (req) => {
          started.resolve()
          // timers/promises, events.once, stream.pipeline: an AbortError whose cause is the signal's reason.
          await sleep(60_000, undefined, { signal: req.deadline.signal })
        }),
      )
      // Sees what the handler threw, then hands it on to deadlineErrors(); once
      // that returns, the error has been judged (Express calls on synchronously).
      app.use(((error, _req, _res, next) => {
        next(error)
        judged.resolve(error)
      }) as ErrorRequestHandler)
    })
    const controller = new AbortController()
    const call = request(url, { dispatcher: agent, signal: controller.signal })
    await started.promise
    controller.abort()
    await expect(call).rejects.toThrow()
    const thrown = await judged.promise
    expect(thrown).toMatchObject({ name: 'AbortError', cause: { code: 'CLIENT_CLOSED' } })
    expect(passedOn).toEqual([])
  })

  it("maps the AbortError Node's own APIs throw when a slice ran out (its cause the slice's DeadlineExceededError) to the 504 naming it", async () => {
    const { url, passedOn } = await serve((app) => {
      app.get(
        '/',
        major.route(async (req) => {
          const model = req.plan!.slice('model')
          await sleep(60_000, undefined, { signal: model.signal })
        }),
      )
    })
    const got = await get(url, { 'x-deadline-remaining-ms': '300' })
    expect(got.status).toBe(504)
    expect(got.body).toMatchObject({ error: 'deadline_exceeded', budgetMs: 300, slice: 'model' })
    expect(passedOn).toEqual([])
  })

  it('still knows the request is answered when the handler narrowed req.deadline to a child of it', async () => {
    const { url, passedOn } = await serve((app) => {
      app.get(
        '/',
        major.route(async (req) => {
          req.deadline = req.deadline.child(5000)
          await aborted(req.deadline.signal)
          const abort = new Error('aborted')
          abort.name = 'AbortError'
          throw abort
        }),
      )
    })
    const got = await get(url, { 'x-deadline-remaining-ms': '50' })
    expect(got.status).toBe(504)
    const next = await request(`${url}/missing`, { dispatcher: agent })
    await next.body.dump()
    expect(next.statusCode).toBe(404)
    // Found through the child's parent: the late abort is swallowed, not passed on.
    expect(passedOn).toEqual([])
  })

  it('without deadline() in the chain, answers a DeadlineExceededError from what the error knows', async () => {
    const { url } = await serve((app) => {
      app.get('/', () => {
        throw new DeadlineExceededError({ budgetMs: 800, elapsedMs: 812.4, slice: 'model' })
      })
    }, false)
    const got = await get(url)
    expect(got.status).toBe(504)
    expect(got.headers['x-deadline-expired']).toBe('1')
    expect(got.body).toEqual({
      error: 'deadline_exceeded',
      budgetMs: 800,
      elapsedMs: 812,
      slice: 'model',
    })
  })

  it.each([
    ['without deadline() in the chain', false],
    ['with deadline() in observe mode', true],
  ])(
    '%s, leaves a response the handler already completed alone: its keep-alive connection serves the next request',
    async (_name, observe) => {
      const app = major.app()
      if (observe) app.use(deadline({ mode: 'observe' }))
      // The handler answered in full (a Content-Length, more than the socket
      // takes at once: still flushing), then a step after it (an audit call
      // under the request's deadline, refused by its client for lack of
      // budget: that deadline's expiry, as the client marks it) ran out.
      const big = { text: 'x'.repeat(4 << 20) }
      app.get('/', (req, res, next) => {
        res.json(big)
        const error = new DeadlineExceededError({ budgetMs: 50, elapsedMs: 51 })
        next(req.deadline ? markExpiryOf(error, req.deadline) : error)
      })
      app.use(deadlineErrors())
      server = await listen(app)
      for (let i = 0; i < 2; i++) {
        const got = await get(server.url)
        expect(got.status).toBe(200)
        expect(got.text.length).toBe(JSON.stringify(big).length)
      }
      // Not destroyed as a "cut-short fixed-length response": one connection for both.
      expect(server.connections).toHaveLength(1)
    },
  )

  it('with deadline() in observe mode, ends a response that wrote all the length it declared, end() still to come: its connection serves the next request', async () => {
    const app = major.app()
    app.use(deadline({ mode: 'observe' }))
    app.get('/', (req, res, next) => {
      // The whole body written; the handler awaits something before end(),
      // and a step of it runs out.
      res.writeHead(200, { 'Content-Length': '4' })
      res.write('abcd')
      next(markExpiryOf(new DeadlineExceededError({ budgetMs: 50, elapsedMs: 51 }), req.deadline))
    })
    app.use(deadlineErrors())
    server = await listen(app)
    for (let i = 0; i < 2; i++) {
      const res = await request(server.url, { dispatcher: agent })
      expect(res.statusCode).toBe(200)
      expect(await res.body.text()).toBe('abcd')
    }
    // Before, destroyed as a cut-short fixed-length response: a connection each.
    expect(server.connections).toHaveLength(1)
  })

  it('ends a stream already started instead of writing a 504 into it', async () => {
    const { url } = await serve((app) => {
      app.get('/', (req, res, next) => {
        res.write('partial ')
        // A step bounded by a deadline of the request's line runs out.
        const step = req.deadline?.child(5) ?? Deadline.after(5)
        guard(new Promise(() => {}), { deadline: step }).catch(next)
      })
    })
    const res = await request(url, { dispatcher: agent })
    expect(res.statusCode).toBe(200)
    expect(await res.body.text()).toBe('partial ')
  })

  it('passes on no "Request aborted" from res.download(file, callback) whose client reset the connection mid-file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hourglass-download-'))
    // Larger than loopback's buffers: the send is still going when the client resets.
    writeFileSync(join(dir, 'big.bin'), Buffer.alloc(32 * 1024 * 1024))
    try {
      const app = major.app()
      const passedOn: unknown[] = []
      const sent = deferred<unknown>()
      const ended = record<{ outcome: string }>('hourglass:ingress:end')
      app.use(deadline({ reserveMs: 10 }))
      app.get('/big.bin', (_req, res, next) => {
        // The callback Express's docs show: an error goes on to the error handlers.
        res.download(join(dir, 'big.bin'), (error) => {
          if (error) next(error)
          sent.resolve(error)
        })
      })
      app.use(deadlineErrors())
      app.use(((error, _req, res, _next) => {
        passedOn.push(error)
        if (!res.headersSent) res.status(500).end()
      }) as ErrorRequestHandler)
      server = await listen(app)
      const { port } = new URL(server.url)
      const socket = connect(Number(port), '127.0.0.1')
      socket.write('GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n')
      await once(socket, 'data')
      socket.resetAndDestroy()
      expect(await sent.promise).toMatchObject({ code: 'ECONNABORTED' })
      await ended.count(1)
      ended.stop()
      expect(ended.messages.map((m) => m.outcome)).toEqual(['client-closed'])
      expect(passedOn.map((e) => (e as Error).message)).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('passes on no "headers already sent" from a static file route the 504 went out ahead of', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hourglass-static-'))
    writeFileSync(join(dir, 'report.txt'), 'the report')
    try {
      const clock = new ManualClock()
      const app = major.app()
      const passedOn: unknown[] = []
      app.use(deadline({ clock, reserveMs: 0 }))
      // A slow auth check: the deadline runs out (504) before it lets the request on.
      app.use((req, _res, next) => {
        if (req.path === '/report.txt') clock.advance(5000)
        next()
      })
      // `send` looks the file up, then finds the 504's headers sent: a 500 error it hands to next.
      const serveStatic = (major.name === 'express 5' ? express.static : express4.static)(dir)
      const lookedUp = deferred<unknown>()
      app.use((req, res, next) => {
        serveStatic(req, res, (error?: unknown) => {
          next(error)
          lookedUp.resolve(error)
        })
      })
      app.get('/next', (_req, res) => {
        res.json({ next: true })
      })
      app.use(deadlineErrors())
      app.use(((error, _req, res, _next) => {
        passedOn.push(error)
        res.status(500).end()
      }) as ErrorRequestHandler)
      server = await listen(app)
      const got = await get(`${server.url}/report.txt`)
      expect(got.status).toBe(504)
      expect(await lookedUp.promise).toMatchObject({ status: 500 })
      expect(passedOn.map((e) => (e as Error).message)).toEqual([])
      expect((await get(`${server.url}/next`)).body).toEqual({ next: true })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('answers nothing and reports no expiry for a deadline error that arrives after the client left', async () => {
    const expires = record<{ action: string }>('hourglass:ingress:expire')
    const ends = record<{ outcome: string }>('hourglass:ingress:end')
    const judged = deferred()
    const started = deferred()
    const onExpire: string[] = []
    try {
      const app = major.app()
      const passedOn: unknown[] = []
      app.use(deadline({ reserveMs: 10, onExpire: (event) => onExpire.push(event.action) }))
      app.get('/', (_req, res, next) => {
        started.resolve()
        // The caller gives up; then a step of the handler's own (a downstream
        // that ran out, a deadline of its own) fails with a deadline error.
        res.on('close', () => {
          next(new DeadlineExceededError({ budgetMs: 100, elapsedMs: 100, slice: 'model' }))
          judged.resolve()
        })
      })
      app.use(deadlineErrors())
      app.use(((error, _req, res, _next) => {
        passedOn.push(error)
        res.status(500).end()
      }) as ErrorRequestHandler)
      server = await listen(app)
      const controller = new AbortController()
      const call = request(server.url, { dispatcher: agent, signal: controller.signal })
      await started.promise
      controller.abort()
      await expect(call).rejects.toThrow()
      await judged.promise
      expect(ends.messages.map((m) => m.outcome)).toEqual(['client-closed'])
      // No 504 went anywhere: no expire event, no onExpire, nothing passed on.
      expect(expires.messages.map((m) => m.action)).toEqual([])
      expect(onExpire).toEqual([])
      expect(passedOn).toEqual([])
    } finally {
      expires.stop()
      ends.stop()
    }
  })
})
