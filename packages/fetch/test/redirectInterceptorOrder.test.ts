import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { Agent, type Dispatcher, interceptors, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { deadlineInterceptor } from '../src/index.js'

// undici's redirect interceptor follows a redirect with the options it was
// given. Composed beneath deadlineInterceptor, the hop is neither announced
// nor refused (its header is read again as undici makes it:
// innerResendDeadlineHeader.test.ts); composed outside it (as the README
// says), each hop passes through the interceptor and is sent with what is
// left at its own dispatch. undici's retry interceptor composed beneath it
// sends its retries (and resumes of a broken body) through the handler of an
// attempt that may be over by then: those are stopped, never the caller's.
// No test here measures time: a ManualClock moves while the first server
// "works", and undici's back-off is held until the test ends it.

let server: Server | undefined
let agent: Agent | undefined
afterEach(async () => {
  await agent?.close()
  agent = undefined
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

it('with the redirect interceptor composed outside it, each hop carries what is left at its own dispatch', async () => {
  const clock = new ManualClock()
  const seen: Array<{ url: string | undefined; remaining: IncomingMessage['headers'][string] }> = []
  server = createServer((req, res) => {
    seen.push({ url: req.url, remaining: req.headers['x-deadline-remaining-ms'] })
    if (req.url === '/start') {
      // The first server takes 300 ms of the caller's budget to redirect it.
      clock.advance(300)
      res.writeHead(303, { location: '/next' }).end()
      return
    }
    res.end('done')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  agent = new Agent()
  const dispatcher = agent.compose(
    deadlineInterceptor(),
    interceptors.redirect({ maxRedirections: 3 }),
  )
  const deadline = Deadline.after(2000, { clock })
  const res = await request(`http://127.0.0.1:${port}/start`, {
    method: 'POST',
    body: 'payload',
    dispatcher,
    deadline,
  } as Parameters<typeof request>[1])
  expect(await res.body.text()).toBe('done')
  expect(seen).toEqual([
    { url: '/start', remaining: '2000' },
    { url: '/next', remaining: '1700' },
  ])
  deadline.dispose()
})

it("with undici's retry interceptor composed beneath it, a deadline that ends during that interceptor's back-off answers the caller then", async () => {
  const clock = new ManualClock()
  let requests = 0
  server = createServer((_req, res) => {
    requests += 1
    res.writeHead(503, { 'retry-after': '1' }).end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  agent = new Agent()
  const backOff = deferred<(error: Error | null) => void>()
  const beneath = requestsBeneath()
  const retryBeneath = interceptors.retry({
    statusCodes: [503],
    maxRetries: 1,
    // undici's back-off, during which the caller's budget runs out; held
    // until the caller has its answer.
    retry: (_error, _state, next) => {
      clock.advance(2000)
      backOff.resolve(next)
    },
  })
  const dispatcher = agent.compose(beneath.interceptor, retryBeneath, deadlineInterceptor())
  const deadline = Deadline.after(1000, { clock })
  const error = await request(`http://127.0.0.1:${port}/`, {
    dispatcher,
    deadline,
  } as Parameters<typeof request>[1]).catch((e: unknown) => e)
  // Before: the caller was answered only when undici's back-off ended (a
  // Retry-After of up to 30 s past the deadline), by the retry it refused.
  expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  const endBackOff = await backOff.promise
  endBackOff(null)
  // The retry undici dispatches when its back-off ends is stopped before a
  // byte of it is written: by the time it has ended, the server has seen
  // one request (a retry that went out would have been seen before its
  // end reached us).
  await beneath.ended[1]?.promise
  expect(requests).toBe(1)
})

interface Deferred<T> {
  promise: Promise<T>
  resolve(value: T): void
}

/** Promise.withResolvers, which Node 20 lacks. */
function deferred<T>(): Deferred<T> {
  let resolve: (value: T) => void = () => {}
  const promise = new Promise<T>((settle) => {
    resolve = settle
  })
  return { promise, resolve }
}

/** A second-API handler that records what the caller sees. */
function recordingHandler() {
  const seen = {
    controller: undefined as Dispatcher.DispatchController | undefined,
    chunks: [] as string[],
    error: undefined as Error | undefined,
    firstChunk: deferred<void>(),
    ended: deferred<void>(),
  }
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart(controller) {
      seen.controller = controller
    },
    onResponseStart() {},
    onResponseData(_controller, chunk) {
      seen.chunks.push(chunk.toString())
      seen.firstChunk.resolve()
    },
    onResponseEnd() {
      seen.ended.resolve()
    },
    onResponseError(_controller, error) {
      seen.error = error
      seen.ended.resolve()
    },
  }
  return { seen, handler }
}

/**
 * Beneath undici's retry interceptor: each request it dispatches, its real
 * controller, and promises per request settled once that request's
 * `onRequestStart` (its first `onResponseData`) has run through every layer
 * above, or once it has ended (`ended`, as the response end or error comes
 * up to undici's retry interceptor).
 */
function requestsBeneath() {
  const controllers: Dispatcher.DispatchController[] = []
  const started: Deferred<void>[] = [0, 1, 2, 3].map(() => deferred())
  const data: Deferred<void>[] = [0, 1, 2, 3].map(() => deferred())
  const ended: Deferred<void>[] = [0, 1, 2, 3].map(() => deferred())
  const interceptor: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
    const index = controllers.length
    controllers.push(undefined as never)
    return dispatch(opts, {
      onRequestStart(controller, context) {
        controllers[index] = controller
        handler.onRequestStart?.(controller, context)
        started[index]?.resolve()
      },
      onRequestUpgrade: (c, s, h, socket) => handler.onRequestUpgrade?.(c, s, h, socket),
      onResponseStart: (c, s, h, m) => handler.onResponseStart?.(c, s, h, m),
      onResponseData(c, chunk) {
        handler.onResponseData?.(c, chunk)
        data[index]?.resolve()
      },
      onResponseEnd(c, t) {
        ended[index]?.resolve()
        handler.onResponseEnd?.(c, t)
      },
      onResponseError(c, e) {
        ended[index]?.resolve()
        handler.onResponseError?.(c, e)
      },
    })
  }
  return { controllers, started, data, ended, interceptor }
}

it("with undici's retry interceptor beneath it, a request that interceptor sends for an attempt already over is stopped, and the caller's controller stays on the live one", async () => {
  const clock = new ManualClock()
  let live: ServerResponse | undefined
  let requests = 0
  server = createServer((_req, res) => {
    requests += 1
    if (requests === 1) res.writeHead(503).end()
    else if (requests === 2) {
      live = res
      res.writeHead(200).write('a')
    } else res.end('from a request no one asked for')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  agent = new Agent()
  const backOff = deferred<(error: Error | null) => void>()
  const beneath = requestsBeneath()
  const dispatcher = agent.compose(
    beneath.interceptor,
    interceptors.retry({
      statusCodes: [503],
      maxRetries: 1,
      // undici's back-off for the 503, held until the test ends it.
      retry: (_error, _state, next) => backOff.resolve(next),
    }),
    deadlineInterceptor({ headersTimeoutMs: 200, clock }),
  )
  const { seen, handler } = recordingHandler()
  dispatcher.dispatch({ origin: `http://127.0.0.1:${port}`, path: '/', method: 'GET' }, handler)
  const endBackOff = await backOff.promise
  // Our headers limit ends the attempt during undici's back-off; our own
  // retry is request 2, whose body now streams.
  clock.advance(200)
  await seen.firstChunk.promise
  // undici's back-off ends: it sends its retry for the attempt that is over.
  endBackOff(null)
  await beneath.started[2]?.promise
  // Before: that request's controller became the caller's: aborted (true)
  // mid-body, and a pause went to it instead of the live request.
  try {
    expect(seen.controller?.aborted).toBe(false)
    seen.controller?.pause()
    expect(beneath.controllers[1]?.paused).toBe(true)
    expect(beneath.controllers[2]?.aborted).toBe(true)
    seen.controller?.resume()
  } finally {
    live?.end('b')
  }
  await seen.ended.promise
  expect(seen.error).toBeUndefined()
  expect(seen.chunks.join('')).toBe('ab')
})

/**
 * Answers 200 with 50 of its 100 bytes and breaks the connection; a request
 * with a `range` (undici's resume) gets a 206 with 10 more bytes, its
 * response left open until the test ends it. Keeps each request's headers.
 */
async function breaksMidBody() {
  const seen: IncomingMessage['headers'][] = []
  const open: ServerResponse[] = []
  const resumed = deferred<void>()
  server = createServer((req, res) => {
    seen.push(req.headers)
    if (req.headers.range === undefined) {
      res.writeHead(200, { 'content-length': '100' })
      res.write('x'.repeat(50), () => res.destroy())
      return
    }
    open.push(res)
    resumed.resolve()
    res.writeHead(206, { 'content-range': 'bytes 50-99/100', 'content-length': '50' })
    res.write('y'.repeat(10))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    seen,
    resumed: resumed.promise,
    endAll: () => {
      for (const res of open) res.end('y'.repeat(40))
    },
  }
}

it("with undici's retry interceptor beneath it, a resume that interceptor sends after the deadline answered the caller is stopped at its first byte", async () => {
  const clock = new ManualClock()
  const target = await breaksMidBody()
  agent = new Agent()
  const backOff = deferred<(error: Error | null) => void>()
  const beneath = requestsBeneath()
  const dispatcher = agent.compose(
    beneath.interceptor,
    interceptors.retry({
      // undici's back-off for the broken body, held until the test ends it.
      retry: (_error, _state, next) => backOff.resolve(next),
    }),
    deadlineInterceptor(),
  )
  const deadline = Deadline.after(300, { clock })
  const { seen, handler } = recordingHandler()
  dispatcher.dispatch(
    { origin: target.origin, path: '/', method: 'GET', deadline } as Dispatcher.DispatchOptions,
    handler,
  )
  const endBackOff = await backOff.promise
  clock.advance(300)
  await seen.ended.promise
  expect(seen.error).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  // undici's back-off ends: it resumes the body for a caller already answered.
  endBackOff(null)
  try {
    await beneath.data[1]?.promise
    expect(target.seen[1]?.range).toBe('bytes=50-99')
    // Before: that response streamed on to its end, read for no one.
    expect(beneath.controllers[1]?.aborted).toBe(true)
  } finally {
    target.endAll()
  }
  deadline.dispose()
})

it("with undici's retry interceptor beneath it, request(): a resume sent after the deadline failed the body is stopped at its first byte", async () => {
  const clock = new ManualClock()
  const target = await breaksMidBody()
  agent = new Agent()
  const backOff = deferred<(error: Error | null) => void>()
  const beneath = requestsBeneath()
  const dispatcher = agent.compose(
    beneath.interceptor,
    interceptors.retry({ retry: (_error, _state, next) => backOff.resolve(next) }),
    deadlineInterceptor(),
  )
  const deadline = Deadline.after(300, { clock })
  const res = await request(`${target.origin}/`, { dispatcher, deadline } as Parameters<
    typeof request
  >[1])
  const read = res.body.text().catch((e: unknown) => e)
  const endBackOff = await backOff.promise
  clock.advance(300)
  expect(await read).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  endBackOff(null)
  try {
    await beneath.data[1]?.promise
    // Before: that response streamed on to its end, read for no one.
    expect(beneath.controllers[1]?.aborted).toBe(true)
  } finally {
    target.endAll()
  }
  deadline.dispose()
})

it("with undici's retry interceptor beneath it, a resumed request carries the caller's record headers under their names", async () => {
  const target = await breaksMidBody()
  agent = new Agent()
  const dispatcher = agent.compose(
    interceptors.retry({ retry: (_error, _state, next) => next(null) }),
    deadlineInterceptor(),
  )
  const deadline = Deadline.after(10_000)
  const { seen, handler } = recordingHandler()
  dispatcher.dispatch(
    {
      origin: target.origin,
      path: '/',
      method: 'GET',
      headers: { authorization: 'Bearer t' },
      deadline,
    } as Dispatcher.DispatchOptions,
    handler,
  )
  await target.resumed
  target.endAll()
  await seen.ended.promise
  deadline.dispose()
  // Before: undici's resume spread our flat array into a record:
  // "0": "authorization", "1": "Bearer t" — the credential under header 1.
  expect(target.seen[1]).toMatchObject({ range: 'bytes=50-99', authorization: 'Bearer t' })
  expect(target.seen[1]).not.toHaveProperty('1')
  expect(seen.error).toBeUndefined()
  expect(seen.chunks.join('')).toBe('x'.repeat(50) + 'y'.repeat(50))
})

it.each([
  ['a Map', () => new Map([['authorization', 'Bearer t']])],
  ['a Headers', () => new Headers({ authorization: 'Bearer t' })],
  [
    'a generator of pairs',
    () =>
      (function* () {
        yield ['authorization', 'Bearer t']
      })(),
  ],
] as const)(
  "with undici's retry interceptor beneath it, a resumed request carries headers given as %s under their names",
  async (_shape, given) => {
    await resumesWithHeaders(given(), Deadline.after(10_000))
  },
)

it("with undici's retry interceptor beneath it and no deadline, a resumed request carries headers given as a Map under their names", async () => {
  // Nothing of ours to add: the caller's pairs still reach undici as a record.
  await resumesWithHeaders(new Map([['authorization', 'Bearer t']]), undefined)
})

/** Sends `headers` through the interceptor over undici's retry, which resumes the body `breaksMidBody` breaks; checks what the resume carried. */
async function resumesWithHeaders(headers: unknown, deadline: Deadline | undefined) {
  const target = await breaksMidBody()
  agent = new Agent()
  const dispatcher = agent.compose(
    interceptors.retry({ retry: (_error, _state, next) => next(null) }),
    deadlineInterceptor(),
  )
  const { seen, handler } = recordingHandler()
  dispatcher.dispatch(
    {
      origin: target.origin,
      path: '/',
      method: 'GET',
      headers,
      deadline,
    } as unknown as Dispatcher.DispatchOptions,
    handler,
  )
  await target.resumed
  target.endAll()
  await seen.ended.promise
  deadline?.dispose()
  // Before: our header was added to a flat array, which undici's resume
  // spread into "0": "authorization", "1": "Bearer t".
  expect(target.seen[1]).not.toHaveProperty('1')
  expect(target.seen[1]).toMatchObject({ range: 'bytes=50-99', authorization: 'Bearer t' })
  expect(seen.error).toBeUndefined()
  expect(seen.chunks.join('')).toBe('x'.repeat(50) + 'y'.repeat(50))
}
