import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { DeadlineExceededError, ManualClock } from '@hourglass/core'
import type { ErrorRequestHandler, Express, RequestHandler, Response } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { deadline, deadlineErrors, expressChannels, type IngressEndMessage } from '../src/index.js'
import { RESPOND_END_GRACE_MS } from '../src/watchEnd.js'
import { deferredEnd } from './support/deferredEnd.js'
import { LAST_CHUNK } from './support/lastChunk.js'
import { pipelined, pipelinedGet } from './support/pipelined.js'
import { deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * The plain 504 (no `respond`) written through a middleware whose `end`
 * completes later and here never does: express-session saving a new
 * session (`saveUninitialized`, its default) to a store that never calls
 * back, a Redis client queueing commands while the server is down. The 504
 * went out all but its last byte and was held for good: the caller read a
 * 504 whose body never ended, the socket stayed open, and the request never
 * ended (no end event, its span never closed). `respond`'s answer was
 * already bounded (`test/respondEndNeverCompletes.test.ts`); the plain one
 * now is too: destroyed `RESPOND_END_GRACE_MS` after it was written, the
 * request ending `expired`. An end that completes within the grace is kept.
 * So are `deadlineErrors()`'s own 504 and `strict`'s 400.
 */
describe.each(majors)('the plain 504 behind an end that never completes ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    vi.useRealTimers()
    await server?.close()
    server = undefined
  })

  async function serve(app: Express) {
    server = await listen(app)
    return request(server.url)
  }

  it.each([
    ['mounted ahead of deadline()', true],
    ['mounted after deadline()', false],
  ])('%s: destroyed a grace after the 504, the request ends expired', async (_name, ahead) => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const handled = deferred<Response>()
      const app = major.app()
      if (ahead) app.use(deferredEnd('never'))
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      if (!ahead) app.use(deferredEnd('never'))
      app.get('/', (_req, res) => handled.resolve(res))
      const answer = serve(app)
      const res = await handled.promise
      clock.advance(990)
      const reply = await answer
      expect(reply.statusCode).toBe(504)
      const body = reply.body.text().catch((error: unknown) => error)
      clock.advance(RESPOND_END_GRACE_MS - 1)
      expect(res.destroyed).toBe(false)
      clock.advance(1)
      // Before, nothing destroyed it: held for good, no end event.
      expect(res.destroyed).toBe(true)
      await ended.count(1)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
      expect(await body).toBeInstanceOf(Error)
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ended.stop()
    }
  })

  it('keeps an end that completes within the grace, and leaves no timer behind', async () => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const handled = deferred<Response>()
      const app = major.app()
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      app.use(deferredEnd('answers'))
      app.get('/', (_req, res) => handled.resolve(res))
      const answer = serve(app)
      await handled.promise
      clock.advance(990)
      const reply = await answer
      expect(JSON.parse(await reply.body.text())).toMatchObject({ error: 'deadline_exceeded' })
      await ended.count(1)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ended.stop()
    }
  })

  it('keeps an end that completes 1 ms before the grace is over', async () => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const saved = deferred()
      const handled = deferred<Response>()
      const app = major.app()
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      app.use(deferredEnd(saved.promise))
      app.get('/', (_req, res) => handled.resolve(res))
      const answer = serve(app)
      const res = await handled.promise
      clock.advance(990)
      const reply = await answer
      const body = reply.body.text()
      clock.advance(RESPOND_END_GRACE_MS - 1)
      saved.resolve()
      await ended.count(1)
      clock.advance(1)
      // Finished whole, not destroyed under it (a clean end closes it too).
      expect(res.writableFinished).toBe(true)
      expect(JSON.parse(await body)).toMatchObject({ error: 'deadline_exceeded' })
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ended.stop()
    }
  })

  it('deadlineErrors() without deadline(): its 504 is destroyed a grace later too', async () => {
    // Only the grace's timer (a system one: no deadline clock without deadline()).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const handled = deferred<Response>()
    const app = major.app()
    app.use(deferredEnd('never') as RequestHandler)
    app.get('/', (_req, res, next) => {
      handled.resolve(res)
      next(new DeadlineExceededError({ budgetMs: 100, elapsedMs: 100, slice: 'lookup' }))
    })
    app.use(deadlineErrors())
    const reply = await serve(app)
    expect(reply.statusCode).toBe(504)
    const res = await handled.promise
    const body = reply.body.text().catch((error: unknown) => error)
    vi.advanceTimersByTime(RESPOND_END_GRACE_MS - 1)
    expect(res.destroyed).toBe(false)
    vi.advanceTimersByTime(1)
    expect(res.destroyed).toBe(true)
    expect(await body).toBeInstanceOf(Error)
  })

  it("strict's 400 for a malformed header is destroyed a grace later too", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const given = deferred<Response>()
      const app = major.app()
      app.use((_req, res, next) => {
        given.resolve(res)
        next()
      })
      app.use(deferredEnd('never'))
      app.use(deadline({ strict: true, clock: new ManualClock() }))
      app.get('/', (_req, res) => {
        res.send('never run')
      })
      server = await listen(app)
      const reply = await request(server.url, { headers: { 'x-deadline-remaining-ms': 'soon' } })
      expect(reply.statusCode).toBe(400)
      const res = await given.promise
      const body = reply.body.text().catch((error: unknown) => error)
      vi.advanceTimersByTime(RESPOND_END_GRACE_MS - 1)
      expect(res.destroyed).toBe(false)
      vi.advanceTimersByTime(1)
      expect(res.destroyed).toBe(true)
      expect(await body).toBeInstanceOf(Error)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['refused', 400]])
    } finally {
      ended.stop()
    }
  })
})

/**
 * The same answers queued behind another pipelined answer on their
 * connection (no socket yet): their wait is the answer ahead's, and a
 * destroy meanwhile took the shared connection, so they are not cut while
 * they wait. Left out of the bound altogether, they were held for good
 * once their turn came (all but the last byte sent, the socket open, the
 * request never ended): the grace now starts at their turn.
 */
describe.each(majors)('the same answers queued behind a pipelined answer ($name)', (major) => {
  const running: Running[] = []
  const sockets: Socket[] = []
  afterEach(async () => {
    vi.useRealTimers()
    for (const socket of sockets.splice(0)) socket.destroy()
    await Promise.all(running.splice(0).map((s) => s.close()))
  })

  /**
   * `/first` writes a byte and ends when `gate` resolves; `/next`'s end
   * goes through a store that never answers (`mount` adds what answers it).
   */
  function pipelineApp(gate: Promise<void>, mount: (app: Express) => void): Express {
    const app = major.app()
    const never = deferredEnd('never')
    app.use((req, res, next) => (req.path === '/next' ? never(req, res, next) : next()))
    mount(app)
    app.get('/first', (_req, res) => {
      res.write('a')
      void gate.then(() => res.end('b'))
    })
    return app
  }

  async function pipeline(app: Express, next: string) {
    const server = await listen(app)
    running.push(server)
    return pipelined(server, pipelinedGet('/first') + next, sockets)
  }

  /** Its turn comes (`/first` ends), then a grace on `advance`'s clock: destroyed at its very end. */
  async function cutAGraceAfterItsTurn(
    res: Response,
    gate: () => void,
    advance: (ms: number) => void,
  ) {
    expect(res.socket).toBeNull()
    advance(RESPOND_END_GRACE_MS)
    // Waiting its turn is no stall: a destroy now took the shared connection.
    expect(res.destroyed).toBe(false)
    const turn = once(res, 'socket')
    gate()
    await turn
    advance(RESPOND_END_GRACE_MS - 1)
    expect(res.destroyed).toBe(false)
    advance(1)
    // Before, nothing bounded it: all but its last byte sent, held for good.
    expect(res.destroyed).toBe(true)
  }

  it("deadline()'s 504: destroyed a grace after its turn, the request ends expired", async () => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const gate = deferred()
      const handled = deferred<Response>()
      const app = pipelineApp(gate.promise, (app) => {
        app.use(deadline({ defaultMs: 10_000, reserveMs: 10, clock }))
        app.get('/next', (_req, res) => handled.resolve(res))
      })
      const connection = await pipeline(app, pipelinedGet('/next', 200))
      const res = await handled.promise
      clock.advance(190) // /next's deadline: its 504, queued behind /first
      await cutAGraceAfterItsTurn(res, gate.resolve, (ms) => clock.advance(ms))
      await ended.count(2)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([
        ['ok', 200],
        ['expired', 504],
      ])
      const text = await connection.text()
      expect([...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual(['200', '504'])
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ended.stop()
    }
  })

  it("strict's 400: destroyed a grace after its turn", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const gate = deferred()
      const given = deferred<Response>()
      const app = pipelineApp(gate.promise, (app) => {
        app.use((req, res, next) => {
          if (req.path === '/next') given.resolve(res)
          next()
        })
        app.use(deadline({ strict: true, clock: new ManualClock() }))
      })
      const connection = await pipeline(
        app,
        'GET /next HTTP/1.1\r\nHost: x\r\nx-deadline-remaining-ms: soon\r\n\r\n',
      )
      const res = await given.promise
      await ended.count(1) // refused, its 400 queued behind /first
      await cutAGraceAfterItsTurn(res, gate.resolve, (ms) => vi.advanceTimersByTime(ms))
      const text = await connection.text()
      expect([...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual(['200', '400'])
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([
        ['refused', 400],
        ['ok', 200],
      ])
    } finally {
      ended.stop()
    }
  })

  it("deadlineErrors()'s 504 without deadline(): destroyed a grace after its turn", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const gate = deferred()
    const answered = deferred<Response>()
    const errors = deadlineErrors()
    const app = pipelineApp(gate.promise, (app) => {
      app.get('/next', (_req, _res, next) => {
        next(new DeadlineExceededError({ budgetMs: 100, elapsedMs: 100, slice: 'lookup' }))
      })
      app.use(((error, req, res, next) => {
        errors(error, req, res, next)
        answered.resolve(res)
      }) as ErrorRequestHandler)
    })
    const connection = await pipeline(app, pipelinedGet('/next'))
    const res = await answered.promise
    await cutAGraceAfterItsTurn(res, gate.resolve, (ms) => vi.advanceTimersByTime(ms))
    const text = await connection.text()
    expect([...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual(['200', '504'])
  })

  /**
   * A started stream (chunked, an SSE feed) queued when its deadline fires:
   * `writeExpired` ends it rather than destroying it (its buffered writes
   * wait their turn), and that end was left out of every bound, before its
   * turn and after: held for good when the end never left.
   */
  it('a stream deadline() ended through an end that never completes: destroyed a grace after its turn', async () => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const gate = deferred()
      const handled = deferred<Response>()
      const app = pipelineApp(gate.promise, (app) => {
        app.use(deadline({ defaultMs: 10_000, reserveMs: 10, clock }))
        app.get('/next', (_req, res) => {
          res.write('event 1\n')
          handled.resolve(res)
        })
      })
      const connection = await pipeline(app, pipelinedGet('/next', 200))
      const res = await handled.promise
      clock.advance(190) // its deadline ends the stream, through the store that never answers
      await cutAGraceAfterItsTurn(res, gate.resolve, (ms) => clock.advance(ms))
      await ended.count(2)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([
        ['ok', 200],
        ['expired', 200],
      ])
      const text = await connection.text()
      expect([...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual(['200', '200'])
      // Cut: no terminating chunk, the client can tell.
      expect(text).toContain('event 1\n')
      // No last chunk at all, with a trailer or without.
      expect(text).not.toMatch(LAST_CHUNK)
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ended.stop()
    }
  })

  it('a stream deadlineErrors() ended without deadline(): destroyed a grace after its turn', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const gate = deferred()
    const answered = deferred<Response>()
    const errors = deadlineErrors()
    const app = pipelineApp(gate.promise, (app) => {
      app.get('/next', (_req, res, next) => {
        res.write('event 1\n')
        next(new DeadlineExceededError({ budgetMs: 100, elapsedMs: 100, slice: 'lookup' }))
      })
      app.use(((error, req, res, next) => {
        errors(error, req, res, next)
        answered.resolve(res)
      }) as ErrorRequestHandler)
    })
    const connection = await pipeline(app, pipelinedGet('/next'))
    const res = await answered.promise
    await cutAGraceAfterItsTurn(res, gate.resolve, (ms) => vi.advanceTimersByTime(ms))
    const text = await connection.text()
    expect([...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual(['200', '200'])
    // No last chunk at all, with a trailer or without.
    expect(text).not.toMatch(LAST_CHUNK)
  })
})

/**
 * A started stream queued behind a pipelined answer holds what it writes
 * while it waits — megabytes, for a feed of any size — and its deadline
 * ends it (no middleware at all). At its turn Node hands the socket all of
 * it: a client that stopped reading never took it, and the end never left
 * (3 s on: 20 MB held, the socket open, the request never ended). Now
 * destroyed once a grace passes without a byte moving; a client still
 * reading is kept however long the rest takes, and gets the clean end.
 */
describe.each(majors)('a queued stream of megabytes the deadline ended ($name)', (major) => {
  const running: Running[] = []
  const sockets: Socket[] = []
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy()
    await Promise.all(running.splice(0).map((s) => s.close()))
  })

  /** Bytes `/next` writes while queued: more than the OS buffers on loopback take. */
  const SIZE = 12 * 1024 * 1024

  /**
   * `/first` then `/next`, whose 200 ms deadline ends it while it waits
   * behind `/first`, from a client that reads nothing yet; back once
   * `/next` has its turn, with what the server's socket still holds.
   */
  async function queuedAtItsTurn(clock: ManualClock) {
    const gate = deferred()
    const handled = deferred<Response>()
    const app = major.app()
    app.use(deadline({ defaultMs: 10_000, reserveMs: 10, clock }))
    app.get('/first', (_req, res) => {
      res.write('a')
      void gate.promise.then(() => res.end('b'))
    })
    app.get('/next', (_req, res) => {
      const chunk = Buffer.alloc(64 * 1024, 120)
      for (let i = 0; i < SIZE / chunk.length; i++) res.write(chunk)
      handled.resolve(res)
    })
    const server = await listen(app)
    running.push(server)
    const client = connect(Number(new URL(server.url).port), '127.0.0.1')
    sockets.push(client)
    client.on('error', () => {})
    await once(client, 'connect')
    client.pause()
    client.write(pipelinedGet('/first') + pipelinedGet('/next', 200))
    const res = await handled.promise
    expect(res.socket).toBeNull()
    clock.advance(190) // its deadline: ended, not destroyed (it waits its turn)
    expect(res.writableEnded).toBe(true)
    const turn = once(res, 'socket')
    gate.resolve()
    await turn
    const served = res.socket as Socket & { _handle: { writeQueueSize: number } }
    // The case at hand: the OS took part of it, the rest waits for the client.
    expect(served._handle.writeQueueSize).toBeGreaterThan(0)
    return { res, client, served }
  }

  it('its client reading nothing: destroyed a grace after its turn, the request ends expired', async () => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const { res } = await queuedAtItsTurn(clock)
      clock.advance(RESPOND_END_GRACE_MS - 1)
      expect(res.destroyed).toBe(false)
      clock.advance(1)
      // Before, nothing bounded it: its megabytes and the socket held for good.
      expect(res.destroyed).toBe(true)
      await ended.count(2)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([
        ['ok', 200],
        ['expired', 200],
      ])
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ended.stop()
    }
  })

  it('its client still reading: kept past the grace while its bytes move, and ends clean', async () => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const { res, client, served } = await queuedAtItsTurn(clock)
      const held = served._handle.writeQueueSize
      clock.advance(RESPOND_END_GRACE_MS - 1)
      // The client reads until the socket has handed the OS more of it, then stops.
      const moved = deferred()
      const reading = () => {
        if (served._handle.writeQueueSize >= held) return
        client.pause()
        moved.resolve()
      }
      client.on('data', reading)
      client.resume()
      await moved.promise
      // Still going: its end has not left.
      expect(res.writableFinished).toBe(false)
      clock.advance(1)
      // A fixed grace cut a client still reading.
      expect(res.destroyed).toBe(false)
      // The rest, read whole, up to the terminating chunk.
      client.off('data', reading)
      const whole = deferred()
      let tail = ''
      client.on('data', (chunk: Buffer) => {
        tail = (tail + chunk.subarray(-40).toString('latin1')).slice(-40)
        if (tail.endsWith('\r\n0\r\nx-deadline-expired: 1\r\n\r\n')) whole.resolve()
      })
      client.resume()
      await whole.promise
      await ended.count(2)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([
        ['ok', 200],
        ['expired', 200],
      ])
      // Finished whole, not destroyed under it (a clean end closes it too).
      expect(res.writableFinished).toBe(true)
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ended.stop()
    }
  })
})
