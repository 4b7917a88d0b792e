import { connect, type Socket } from 'node:net'
import { ManualClock } from '@hourglass/core'
import type { ErrorRequestHandler, RequestHandler } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * README, Limits: the 504 does not stop the chain. Express hands every layer
 * the router's own `next`, so a body parser that finishes a slow upload after
 * the deadline answered runs the route for a caller already told 504 — and
 * the README's check ahead of the routes (`req.deadline.signal.aborted`)
 * stops it there, without stopping what it must not: an observed expiry, or
 * the middleware after a route that answered in time.
 */

/** The README's check, as written there. */
const stillWorthIt: RequestHandler = (req, _res, next) => {
  if (!req.deadline.signal.aborted) next()
}

/** A raw HTTP/1 connection: the test decides when each part of the upload goes out. */
function rawClient(url: string) {
  const { port } = new URL(url)
  const socket = connect(Number(port), '127.0.0.1')
  let received = ''
  const waiting: Array<{ text: string; resolve: () => void }> = []
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    received += chunk
    for (const w of waiting.filter((w) => received.includes(w.text))) {
      waiting.splice(waiting.indexOf(w), 1)
      w.resolve()
    }
  })
  return {
    socket,
    /** Resolves once what the server sent includes `text`. */
    until: (text: string): Promise<void> =>
      received.includes(text)
        ? Promise.resolve()
        : new Promise((resolve) => waiting.push({ text, resolve })),
    received: () => received,
  }
}

describe.each(majors)('a next() after the deadline answered ($name)', (major) => {
  let server: Running | undefined
  let socket: Socket | undefined
  const agent = client()
  afterEach(async () => {
    socket?.destroy()
    socket = undefined
    await server?.close()
    server = undefined
  })

  /** deadline(), a body parser, the README's check when `guarded`, and a route recording its runs. */
  async function slowUploadApp(options: { guarded: boolean; mode?: 'enforce' | 'observe' }) {
    const clock = new ManualClock()
    const arrived = deferred()
    const parsed = deferred()
    const ran: Array<{ aborted: boolean; body: unknown }> = []
    const app = major.app()
    app.use(deadline({ clock, reserveMs: 0, mode: options.mode ?? 'enforce' }))
    app.use((_req, _res, next) => {
      arrived.resolve()
      next()
    })
    app.use(major.json())
    // The rest of the chain runs within this next(): done when it returns.
    app.use((_req, _res, next) => {
      next()
      parsed.resolve()
    })
    if (options.guarded) app.use(stillWorthIt)
    app.post('/orders', (req, res) => {
      ran.push({ aborted: req.deadline.signal.aborted, body: req.body })
      res.json({ created: true })
    })
    server = await listen(app)
    const raw = rawClient(server.url)
    socket = raw.socket
    // Headers and the first part of the body; the rest comes after the deadline.
    raw.socket.write(
      'POST /orders HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n' +
        'content-length: 11\r\nx-deadline-remaining-ms: 1000\r\n\r\n{"a":',
    )
    await arrived.promise
    clock.advance(1000)
    return { raw, ran, parsed: parsed.promise }
  }

  it('runs the route when the parser finishes after the 504: the limit the README states', async () => {
    const { raw, ran, parsed } = await slowUploadApp({ guarded: false })
    await raw.until('\r\n\r\n')
    expect(raw.received()).toMatch(/^HTTP\/1\.1 504 /)
    raw.socket.write('12345}')
    await parsed
    expect(ran).toEqual([{ aborted: true, body: { a: 12345 } }])
  })

  it("is stopped by the README's check ahead of the routes: the route does not run", async () => {
    const { raw, ran, parsed } = await slowUploadApp({ guarded: true })
    await raw.until('\r\n\r\n')
    expect(raw.received()).toMatch(/^HTTP\/1\.1 504 /)
    raw.socket.write('12345}')
    await parsed
    expect(ran).toEqual([])
  })

  it('in observe mode passes the check: the route runs and answers', async () => {
    const { raw, ran, parsed } = await slowUploadApp({ guarded: true, mode: 'observe' })
    raw.socket.write('12345}')
    await parsed
    expect(ran).toEqual([{ aborted: false, body: { a: 12345 } }])
    await raw.until('{"created":true}')
    expect(raw.received()).toMatch(/^HTTP\/1\.1 200 /)
  })

  /**
   * A layer ahead of the parser (an auth lookup, a session store) outlasts
   * the deadline: once the 504 is out Node drains the body nobody reads,
   * and the parser that layer's late next() reaches reads what is left.
   */
  async function parserAfterSlowLayer(firstPart: string, rest: string) {
    const clock = new ManualClock()
    const arrived = deferred()
    const lookup = deferred()
    const handled = deferred<unknown>()
    const passedOn: unknown[] = []
    const errors = deadlineErrors()
    const app = major.app()
    app.use(deadline({ clock, reserveMs: 0 }))
    app.use(async (_req, _res, next) => {
      arrived.resolve()
      await lookup.promise
      next()
    })
    app.use(major.json())
    app.post('/orders', (_req, res) => {
      res.json({ created: true })
    })
    // deadlineErrors(), recording what it passes on to the app's handlers.
    const recorded: ErrorRequestHandler = (error, req, res, _next) => {
      errors(error, req, res, (passed) => passedOn.push(passed))
      handled.resolve(error)
    }
    app.use(recorded)
    server = await listen(app)
    const raw = rawClient(server.url)
    socket = raw.socket
    raw.socket.write(
      'POST /orders HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n' +
        `content-length: ${firstPart.length + rest.length}\r\n` +
        `x-deadline-remaining-ms: 1000\r\n\r\n${firstPart}`,
    )
    await arrived.promise
    clock.advance(1000)
    await raw.until('\r\n\r\n')
    expect(raw.received()).toMatch(/^HTTP\/1\.1 504 /)
    lookup.resolve()
    if (rest !== '') raw.socket.write(rest)
    return { error: await handled.promise, passedOn }
  }

  it("a body parser reached after the 504, its body still arriving: its error for the body Node drained reaches none of the app's error handlers", async () => {
    const { error, passedOn } = await parserAfterSlowLayer('{"a":', '12345}')
    // What the parser read: the tail alone, short of the declared length.
    expect(error).toMatchObject({ type: 'request.size.invalid' })
    expect(passedOn).toEqual([])
  })

  it.runIf(major.name === 'express 4')(
    "a body parser reached after the 504, its body drained already: body-parser 1's 'stream is not readable' reaches none of the app's error handlers",
    async () => {
      const { error, passedOn } = await parserAfterSlowLayer('{"a":12345}', '')
      expect(error).toMatchObject({ type: 'stream.not.readable' })
      expect(passedOn).toEqual([])
    },
  )

  it('a route that answered in time passes the check: the middleware after it runs', async () => {
    const after = deferred<{ aborted: boolean }>()
    const app = major.app()
    app.use(deadline({ clock: new ManualClock(), reserveMs: 0 }))
    app.use(stillWorthIt)
    app.get('/orders', (_req, res, next) => {
      res.json({ listed: true })
      next()
    })
    app.use(stillWorthIt)
    app.use((req) => after.resolve({ aborted: req.deadline.signal.aborted }))
    server = await listen(app)
    const answer = await request(`${server.url}/orders`, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    expect(answer.statusCode).toBe(200)
    expect(await answer.body.json()).toEqual({ listed: true })
    expect(await after.promise).toEqual({ aborted: false })
  })
})
