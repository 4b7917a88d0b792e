import { once } from 'node:events'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { ReadableStream } from 'node:stream/web'
import { isClientClosed, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import type { ErrorRequestHandler, RequestHandler } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { aborted, client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * `await pipeline(source, res)` without the deadline's signal, cut by the
 * deadline or by the client leaving. It rejects — with the deadline's error,
 * or with Node's ERR_STREAM_PREMATURE_CLOSE when the response closed under
 * it first — and deadlineErrors() swallows either: nothing reaches the
 * user's error handler, which logged a stack for every stream the deadline
 * cut. The source is destroyed, not left open.
 */

/** What a pipeline cut under a response that is over rejects with. */
function isCutError(error: unknown): boolean {
  return (
    isDeadlineExceeded(error) ||
    isClientClosed(error) ||
    (error as { code?: unknown } | null)?.code === 'ERR_STREAM_PREMATURE_CLOSE'
  )
}

/** An upstream body arriving slowly: its first part, then nothing more. */
function slowSource() {
  const source = new Readable({ read() {} })
  source.push('first part')
  return source
}

/** Reads a body as it comes: its first chunk, and all of it (rejects if it is cut). */
function reading(body: Readable) {
  const chunks: Buffer[] = []
  body.on('data', (chunk: Buffer) => chunks.push(chunk))
  const whole = new Promise<string>((resolve, reject) => {
    body.once('end', () => resolve(Buffer.concat(chunks).toString()))
    body.once('error', reject)
  })
  whole.catch(() => {})
  return { first: once(body, 'data'), whole }
}

/**
 * An upstream that never ends, read through `Readable.fromWeb` (as a fetch
 * body is): its destruction finishes only after the web stream's cancel
 * settles, so after the response has finished.
 */
function webSource(first: string) {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(first))
    },
  })
  return Readable.fromWeb(body)
}

describe.each(majors)('pipeline(source, res) cut short ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  /**
   * An app whose route pipes `source()` into the response (after `prepare`)
   * with `pipeline` and no signal; records what the pipeline settled with and
   * what reached the user's error handler after deadlineErrors().
   */
  async function serve(
    options: { clock?: ManualClock; defaultMs?: number },
    source: () => Readable,
    prepare: RequestHandler = (_req, _res, next) => next(),
  ) {
    const app = major.app()
    const piped = deferred<Readable>()
    const settled = deferred<unknown>()
    const judged = deferred<unknown>()
    const passedOn: unknown[] = []
    app.use(deadline({ reserveMs: 0, ...options }))
    app.get(
      '/',
      prepare,
      major.route(async (_req, res) => {
        const stream = source()
        piped.resolve(stream)
        try {
          await pipeline(stream, res)
          settled.resolve('resolved')
        } catch (error) {
          settled.resolve(error)
          throw error
        }
      }),
    )
    // Sees what the route threw and hands it on; once next() returns, it has
    // been judged (Express calls the handlers after it synchronously).
    app.use(((error, _req, _res, next) => {
      next(error)
      judged.resolve(error)
    }) as ErrorRequestHandler)
    app.use(deadlineErrors())
    app.use(((error, _req, res, _next) => {
      passedOn.push(error)
      res.destroy()
    }) as ErrorRequestHandler)
    server = await listen(app)
    return { url: server.url, piped: piped.promise, settled: settled.promise, judged, passedOn }
  }

  it.each([
    ['a chunked stream, ended', false],
    ['a declared Content-Length, destroyed', true],
  ])(
    'by the deadline (%s): rejects, the source destroyed, nothing passed on',
    async (_, declared) => {
      const clock = new ManualClock()
      const { url, piped, settled, judged, passedOn } = await serve(
        { clock },
        slowSource,
        (_req, res, next) => {
          if (declared) res.setHeader('content-length', '100')
          next()
        },
      )
      const answer = await request(url, {
        headers: { 'x-deadline-remaining-ms': '1000' },
        dispatcher: agent,
      })
      const source = await piped
      const body = reading(answer.body)
      await body.first
      clock.advance(1000)
      if (declared) await expect(body.whole).rejects.toThrow()
      else expect(await body.whole).toBe('first part')
      expect(isCutError(await settled)).toBe(true)
      expect(source.destroyed).toBe(true)
      await judged.promise
      expect(passedOn).toEqual([])
    },
  )

  it('by the deadline before anything was written (504): rejects, the source destroyed, nothing passed on', async () => {
    const clock = new ManualClock()
    // An upstream that has sent nothing yet.
    const { url, piped, settled, judged, passedOn } = await serve(
      { clock },
      () => new Readable({ read() {} }),
    )
    const answer = request(url, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    const source = await piped
    clock.advance(1000)
    const got = await answer
    expect(got.statusCode).toBe(504)
    await got.body.dump()
    expect(isCutError(await settled)).toBe(true)
    expect(source.destroyed).toBe(true)
    await judged.promise
    expect(passedOn).toEqual([])
  })

  it('by the deadline, from a source whose destruction finishes late (Readable.fromWeb): rejects, nothing passed on', async () => {
    const clock = new ManualClock()
    const { url, settled, judged, passedOn } = await serve({ clock }, () => webSource('first part'))
    const answer = await request(url, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    const body = reading(answer.body)
    await body.first
    clock.advance(1000)
    expect(await body.whole).toBe('first part')
    expect(isCutError(await settled)).toBe(true)
    await judged.promise
    expect(passedOn).toEqual([])
  })

  it('by the client leaving: the source is destroyed, and nothing reaches the user error handler', async () => {
    const { url, piped, settled, judged, passedOn } = await serve({ defaultMs: 10_000 }, slowSource)
    const caller = new AbortController()
    const answer = await request(url, { signal: caller.signal, dispatcher: agent })
    const source = await piped
    await reading(answer.body).first
    caller.abort()
    expect(isCutError(await settled)).toBe(true)
    await judged.promise
    expect(passedOn).toEqual([])
    expect(source.destroyed).toBe(true)
  })
})

describe.each(majors)('deadlineErrors() given a premature close ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('swallows it after the deadline answered (a stream the deadline cut), passes it on otherwise', async () => {
    const app = major.app()
    const passedOn: unknown[] = []
    const judged = deferred()
    const prematureClose = () =>
      Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })
    app.use(deadline({ reserveMs: 0 }))
    app.get(
      '/cut',
      major.route(async (req) => {
        await aborted(req.deadline.signal)
        throw prematureClose()
      }),
    )
    app.get('/live', () => {
      throw prematureClose()
    })
    app.use(((error, _req, _res, next) => {
      next(error)
      judged.resolve()
    }) as ErrorRequestHandler)
    app.use(deadlineErrors())
    app.use(((error, _req, res, _next) => {
      passedOn.push(error)
      res.status(500).end()
    }) as ErrorRequestHandler)
    server = await listen(app)
    const cut = await request(`${server.url}/cut`, {
      headers: { 'x-deadline-remaining-ms': '1' },
      dispatcher: agent,
    })
    expect(cut.statusCode).toBe(504)
    await cut.body.dump()
    await judged.promise
    expect(passedOn).toEqual([])
    // A response still live: a premature close is a real failure, passed on.
    const live = await request(`${server.url}/live`, { dispatcher: agent })
    expect(live.statusCode).toBe(500)
    await live.body.dump()
    expect(passedOn).toMatchObject([{ code: 'ERR_STREAM_PREMATURE_CLOSE' }])
  })
})
