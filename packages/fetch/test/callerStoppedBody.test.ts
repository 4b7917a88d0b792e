import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import * as zlib from 'node:zlib'
import { ClientClosedError, Deadline, DeadlineExceededError, ManualClock } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import {
  Agent,
  type Dispatcher,
  interceptors,
  pipeline,
  request,
  stream,
  errors as undiciErrors,
} from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'
import { type EgressEvents, nextRetry, recordEgress, rejection } from './helpers.js'

// A caller that stops reading a response it already has — `res.body.cancel()`,
// a reader's `cancel()`, its signal aborted mid-body — chose to stop: nothing
// failed and there was nothing to retry. It was judged as a failure all the
// same, a `retry-skipped` (`aborted`) for every response read only in part
// (otel counted each one as `hourglass.deadline.retries{outcome=skipped}`),
// and its `attempt-end` told it from a failure by nothing (`errorCode`
// `AbortError`, or the class of the caller's own reason). Now it publishes no
// `retry-skipped`, and its `attempt-end` says `stoppedBy: 'caller'`. A body
// the network cut is still a failure, whatever the caller does after.

let closers: { close(): Promise<void> | void }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function upstream(fault: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(fault)
  closers.push(server)
  return server
}
function client() {
  const fetch = createFetch({ bodyTimeoutMs: 0 })
  closers.push(fetch)
  return fetch
}
const ends = () =>
  events?.ends.map(({ statusCode, errorCode, stoppedBy }) => ({ statusCode, errorCode, stoppedBy }))

it('createFetch: cancelling a 200 body publishes no retry-skipped; its attempt-end says the caller stopped it', async () => {
  const server = await upstream({ type: 'headers-then-stall' })
  using deadline = Deadline.after(30_000)
  events = recordEgress()
  const res = await client()(server.url, { deadline })
  expect(res.status).toBe(200)
  await res.body?.cancel()
  await server.clientGone(0)

  expect(events.skipped).toEqual([])
  // errorCode is unchanged (other packages read it): the new field tells the stop apart.
  expect(ends()).toEqual([{ statusCode: 200, errorCode: 'AbortError', stoppedBy: 'caller' }])
})

it("createFetch: a reader's cancel with a reason of the caller's own, after reading part: the same", async () => {
  const server = await upstream({ type: 'bytes-then-stall', bytes: 64 })
  using deadline = Deadline.after(30_000)
  events = recordEgress()
  const res = await client()(server.url, { deadline })
  const reader = res.body?.getReader()
  const first = await reader?.read()
  expect(first?.value?.byteLength).toBeGreaterThan(0)
  await reader?.cancel(new Error('enough'))
  await server.clientGone(0)

  expect(events.skipped).toEqual([])
  expect(ends()).toEqual([{ statusCode: 200, errorCode: 'Error', stoppedBy: 'caller' }])
})

it("createFetch: the caller's signal aborted while it reads the body: the same", async () => {
  const server = await upstream({ type: 'headers-then-stall' })
  using deadline = Deadline.after(30_000)
  events = recordEgress()
  const caller = new AbortController()
  const res = await client()(server.url, { deadline, signal: caller.signal })
  const read = rejection(res.text())
  caller.abort()
  expect(await read).toMatchObject({ name: 'AbortError' })
  await server.clientGone(0)

  expect(events.skipped).toEqual([])
  expect(ends()).toEqual([{ statusCode: 200, errorCode: 'AbortError', stoppedBy: 'caller' }])
})

it("the interceptor: the caller's destroy of the body it has, with a reason of its own: the same", async () => {
  const server = await upstream({ type: 'headers-then-stall' })
  using deadline = Deadline.after(30_000)
  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  closers.push(agent)
  events = recordEgress()
  const res = await request(server.url, {
    dispatcher: agent.compose(deadlineInterceptor({ bodyTimeoutMs: 0 })),
    deadline,
  } as never)
  expect(res.statusCode).toBe(200)
  res.body.destroy(new Error('enough'))
  await server.clientGone(0)

  expect(events.skipped).toEqual([])
  // undici's request() stops the request with its own RequestAbortedError, whatever the reason.
  expect(ends()).toEqual([{ statusCode: 200, errorCode: 'UND_ERR_ABORTED', stoppedBy: 'caller' }])
})

it("the interceptor: the caller's signal aborted while it reads the body: the same", async () => {
  const server = await upstream({ type: 'headers-then-stall' })
  using deadline = Deadline.after(30_000)
  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  closers.push(agent)
  events = recordEgress()
  const caller = new AbortController()
  const res = await request(server.url, {
    dispatcher: agent.compose(deadlineInterceptor({ bodyTimeoutMs: 0 })),
    deadline,
    signal: caller.signal,
  } as never)
  const read = rejection(res.body.text())
  caller.abort(new Error('enough'))
  expect(await read).toMatchObject({ message: 'enough' })
  await server.clientGone(0)

  expect(events.skipped).toEqual([])
  expect(events.ends.map((m) => m.stoppedBy)).toEqual(['caller'])
})

// stream()'s factory and pipeline()'s handler are the caller's code, run
// when the answer's headers arrive: one that throws (a status or a
// content-type it will not take) refuses the answer it has, as a Writable
// that fails at once does. The throw was judged the upstream's failure: a
// retry-skipped (`after-first-byte`) and an attempt-end with `errorCode`
// 'Error' and no `stoppedBy` — an errored egress span for a 200 — where the
// failing Writable said the caller stopped it.
it.each([
  [
    'stream(), its factory',
    (url: string, opts: object) =>
      stream(url, opts as never, () => {
        throw new Error('not the content-type I want')
      }),
  ],
  [
    'pipeline(), its handler',
    (url: string, opts: object) =>
      new Promise((_resolve, reject) => {
        const duplex = pipeline(url, opts as never, () => {
          throw new Error('not the content-type I want')
        })
        duplex.on('error', reject).resume().end()
      }),
  ],
])(
  "the interceptor: %s throwing at the answer it has: the same, alone or under undici's redirect interceptor (as the README composes it)",
  async (_api, call) => {
    for (const outer of [[], [interceptors.redirect({ maxRedirections: 2 })]]) {
      await refusedAnswer(call, outer)
    }
  },
)

async function refusedAnswer(
  call: (url: string, opts: object) => Promise<unknown>,
  outer: Dispatcher.DispatcherComposeInterceptor[],
): Promise<void> {
  const server = await upstream({ type: 'headers-then-stall' })
  using deadline = Deadline.after(30_000)
  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  closers.push(agent)
  events?.stop()
  events = recordEgress()
  const dispatcher = agent.compose(deadlineInterceptor({ bodyTimeoutMs: 0 }), ...outer)
  // The caller's own error, as undici hands it on.
  expect(await rejection(call(server.url, { dispatcher, deadline }))).toMatchObject({
    message: 'not the content-type I want',
  })
  await server.clientGone(0)

  expect(events.skipped).toEqual([])
  expect(ends()).toEqual([{ statusCode: 200, errorCode: 'Error', stoppedBy: 'caller' }])
}

it("the interceptor: what a handler above throws at a 3xx is the upstream's answer refused, not the caller's stop", async () => {
  // A redirect interceptor of the caller's, written for undici's older
  // handler API as undici 6's was, reading a malformed Location with `new URL`.
  const server = createServer((_req, res) => res.writeHead(302, { location: 'http://[bad' }).end())
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push({ close: () => new Promise<void>((r) => server.close(() => r())) })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  interface Legacy {
    onConnect?(abort: (error?: Error) => void, context?: object): void
    onHeaders(status: number, raw: Buffer[], resume: () => void, text: string): boolean
    onData?(chunk: Buffer): boolean
    onComplete?(trailers: string[] | null): void
    onError?(error: Error): void
  }
  const redirects: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
    const inner = handler as unknown as Legacy
    const legacy: Legacy = {
      onConnect: (abort, context) => inner.onConnect?.(abort, context),
      onHeaders(status, raw, resume, text) {
        const at = raw.findIndex((name, i) => i % 2 === 0 && name.toString() === 'location')
        if (at >= 0) new URL(String(raw[at + 1]))
        return inner.onHeaders(status, raw, resume, text)
      },
      onData: (chunk) => inner.onData?.(chunk) ?? true,
      onComplete: (trailers) => inner.onComplete?.(trailers),
      onError: (error) => inner.onError?.(error),
    }
    return dispatch(opts, legacy as unknown as Dispatcher.DispatchHandler)
  }
  using deadline = Deadline.after(30_000)
  const agent = new Agent({ connect: createConnector() })
  closers.push(agent)
  events = recordEgress()
  const dispatcher = agent.compose(deadlineInterceptor(), redirects)
  expect(
    await rejection(stream(url, { dispatcher, deadline } as never, () => new PassThrough())),
  ).toMatchObject({ code: 'ERR_INVALID_URL' })
  expect(ends()).toEqual([{ statusCode: 302, errorCode: 'ERR_INVALID_URL', stoppedBy: undefined }])
})

// Who refused the answer, by what was thrown: a factory's bug that undici
// reports (`UND_ERR_INVALID_RETURN_VALUE`) and a refused 404 are the
// caller's; undici's decompress
// refusing a malformed 200 above ours (a plain Error) is the upstream's.
it.each([
  ["a factory that returns no stream: the caller's stop", 200, {}, [], () => ({}), 'caller'],
  [
    "a factory refusing a 404: the caller's stop",
    404,
    {},
    [],
    () => {
      throw new Error('not the status I want')
    },
    'caller',
  ],
  [
    "undici's decompress above ours refusing six content-encodings: the upstream's answer",
    200,
    { 'content-encoding': 'gzip, gzip, gzip, gzip, gzip, gzip' },
    [interceptors.decompress()],
    () => new PassThrough(),
    undefined,
  ],
] as const)('the interceptor: %s', async (_, status, headers, outer, factory, stoppedBy) => {
  const server = createServer((_req, res) => {
    res.writeHead(status, headers)
    res.end('x')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push({ close: () => new Promise<void>((r) => server.close(() => r())) })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  using deadline = Deadline.after(30_000)
  const agent = new Agent({ connect: createConnector() })
  closers.push(agent)
  events = recordEgress()
  const dispatcher = agent.compose(deadlineInterceptor(), ...outer)
  await rejection(stream(url, { dispatcher, deadline } as never, factory as never))
  expect(ends()?.[0]?.stoppedBy).toBe(stoppedBy)
})

// undici refusing the upstream's answer, above ours: decompress failing a
// body midway (it aborts the request through our controller, as a caller's
// destroy does), redirect's "max redirects" at whatever answer follows the
// last hop allowed. The upstream's failure, not the caller's stop.
it("the interceptor: decompress failing a corrupt body midway, and redirect's max redirects at a 200, are the upstream's", async () => {
  let n = 0
  const server = createServer((req, res) => {
    if (req.url === '/corrupt') {
      res.writeHead(200, { 'content-encoding': 'gzip' })
      res.write('this is not gzip') // and the connection held: a long answer still coming
      return
    }
    res.writeHead(n++ === 0 ? 302 : 200, { location: '/next' }).end('x')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push({
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  using deadline = Deadline.after(30_000)
  const agent = new Agent({ connect: createConnector() })
  closers.push(agent)
  events = recordEgress()
  const dispatcher = agent.compose(
    deadlineInterceptor(),
    interceptors.decompress(),
    interceptors.redirect({ maxRedirections: 1 }),
  )
  expect(
    await rejection(
      request(`${url}/corrupt`, { dispatcher, deadline } as never).then((res) => res.body.text()),
    ),
  ).toMatchObject({ code: 'Z_DATA_ERROR' })
  expect(
    await rejection(
      request(`${url}/hop`, { dispatcher, deadline, throwOnMaxRedirect: true } as never),
    ),
  ).toMatchObject({ message: 'max redirects' })
  expect(ends()).toEqual([
    { statusCode: 200, errorCode: 'Z_DATA_ERROR', stoppedBy: undefined },
    { statusCode: 302, errorCode: undefined, stoppedBy: undefined },
    { statusCode: 200, errorCode: 'Error', stoppedBy: undefined },
  ])
})

// zstd's decoder (Node 22 and later; undici's decompress uses it where the
// runtime has it) names its failures `ZSTD_error_*`.
it.skipIf(!('createZstdDecompress' in zlib))(
  "the interceptor: decompress failing a corrupt zstd body midway is the upstream's",
  async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'zstd' })
      res.write('this is not zstd') // and the connection held
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    closers.push({
      close: () =>
        new Promise<void>((r) => {
          server.closeAllConnections()
          server.close(() => r())
        }),
    })
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    using deadline = Deadline.after(30_000)
    const agent = new Agent({ connect: createConnector() })
    closers.push(agent)
    events = recordEgress()
    const dispatcher = agent.compose(deadlineInterceptor(), interceptors.decompress())
    await rejection(request(url, { dispatcher, deadline } as never).then((res) => res.body.text()))
    expect(ends()?.[0]?.stoppedBy).toBeUndefined()
    expect(ends()?.[0]?.errorCode).toMatch(/^ZSTD_/)
  },
)

// An abort from an interceptor above ours between attempts (the caller's
// own overall timeout, firing in a Retry-After wait) ends the call whatever
// its reason: with one of undici's own errors it was read as the upstream's
// refusal, the wait ran out, the retry went out and the 503 was answered.
it('the interceptor: an abort from above during a Retry-After wait, with an undici error, sends no retry', async () => {
  let hits = 0
  const server = createServer((_req, res) => {
    hits++
    res.writeHead(503, { 'retry-after': '30' }).end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push({ close: () => new Promise<void>((r) => server.close(() => r())) })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  let controller: Dispatcher.DispatchController | undefined
  const ownTimeout: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) =>
    dispatch(opts, {
      onRequestStart(started: Dispatcher.DispatchController, context: unknown) {
        controller = started
        handler.onRequestStart?.(started, context)
      },
      onResponseStart: handler.onResponseStart?.bind(handler),
      onResponseData: handler.onResponseData?.bind(handler),
      onResponseEnd: handler.onResponseEnd?.bind(handler),
      onResponseError: handler.onResponseError?.bind(handler),
    } as Dispatcher.DispatchHandler)
  using deadline = Deadline.after(60_000)
  const agent = new Agent({ connect: createConnector() })
  closers.push(agent)
  const dispatcher = agent.compose(deadlineInterceptor({ retry: { statuses: [503] } }), ownTimeout)
  const retried = nextRetry()
  const pending = rejection(request(url, { dispatcher, deadline } as never))
  await retried
  const own = new undiciErrors.HeadersTimeoutError('my own overall timeout')
  controller?.abort(own)
  expect(await pending).toBe(own)
  expect(hits).toBe(1)
})

it('createFetch: a body the network cut, the caller aborting after, is still a failure (unchanged)', async () => {
  // Headers and a first chunk, then the connection is destroyed under the body.
  let answer: ServerResponse | undefined
  const server = createServer((_req, res) => {
    answer = res
    res.writeHead(200, { 'content-length': '1000' })
    res.write('x'.repeat(64))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push({ close: () => void server.close() })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`

  using deadline = Deadline.after(30_000)
  events = recordEgress()
  const caller = new AbortController()
  const res = await client()(url, { deadline, signal: caller.signal })
  const reader = res.body?.getReader()
  await reader?.read()
  answer?.socket?.destroy()
  expect(await rejection(reader?.read() ?? Promise.resolve())).toBeDefined()
  caller.abort()

  expect(events.skipped.map(({ why }) => why)).toEqual(['after-first-byte'])
  const [end] = events.ends
  expect(end?.errorCode).not.toBe('AbortError')
  expect(end?.stoppedBy).toBeUndefined()
})

it('createFetch: a body fetch fails to decode (fetch, not the caller, stops the request) is still a failure', async () => {
  const server = createServer((_req, res) => {
    // Not ended: the attempt is still reading its body when the decoder fails.
    res.writeHead(200, { 'content-encoding': 'gzip' })
    res.write('this is not gzip at all')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push({ close: () => void server.close() })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`

  using deadline = Deadline.after(30_000)
  events = recordEgress()
  const res = await client()(url, { deadline })
  expect(await rejection(res.text())).toBeDefined()

  // undici's fetch stops the request through the same abort a caller's cancel uses.
  expect(events.skipped.map(({ reason, why }) => [reason, why])).toEqual([
    ['Z_DATA_ERROR', 'after-first-byte'],
  ])
  const [end] = events.ends
  expect(end?.errorCode).toBe('Z_DATA_ERROR')
  expect(end?.stoppedBy).toBeUndefined()
})

// A deadline's end is no caller's stop, whichever way it reached the body:
// a signal that follows the deadline (`AbortSignal.any`, llm's own per
// attempt, the parent's) aborts with the deadline's reason before the
// deadline's own watch ends the attempt, and undici's request() given the
// deadline's own signal stops the request through the body it made. Each
// said `stoppedBy: 'caller'` (no retry-skipped, an egress span UNSET) where
// the deadline given alone said the body failed.
class ShutdownError extends Error {
  readonly code = 'GATEWAY_SHUTDOWN'
}
type Lines = { parent: Deadline; deadline: Deadline; clock: ManualClock }
const FOLLOWS_DEADLINE: [
  string,
  string,
  (d: Lines) => AbortSignal,
  (d: Lines) => void,
  string,
  string,
][] = [
  [
    'createFetch',
    "a signal following the deadline; the deadline cancelled with a reason of the app's (a shutdown)",
    (d) => AbortSignal.any([d.deadline.signal]),
    (d) => d.deadline.cancel(new ShutdownError('shutting down')),
    'GATEWAY_SHUTDOWN',
    'after-first-byte',
  ],
  [
    'createFetch',
    // The parent's signal aborts before the deadline below it is cancelled.
    "the parent's signal; the parent cancelled: the client left",
    (d) => d.parent.signal,
    (d) => d.parent.cancel(new ClientClosedError()),
    'CLIENT_CLOSED',
    'aborted',
  ],
  [
    'the interceptor',
    "the deadline's own signal; the deadline expires",
    (d) => d.deadline.signal,
    (d) => d.clock.advance(30_000),
    'DEADLINE_EXCEEDED',
    'no-budget',
  ],
]

it.each(FOLLOWS_DEADLINE)(
  '%s, %s, mid-body: a failure (no stoppedBy, its retry-skipped), as the deadline alone',
  async (entry, _how, signalOf, end, code, why) => {
    const server = await upstream({ type: 'headers-then-stall' })
    const clock = new ManualClock()
    using parent = Deadline.after(30_000, { clock })
    using deadline = parent.child()
    const signal = signalOf({ parent, deadline, clock })
    events = recordEgress()
    let read: Promise<unknown>
    if (entry === 'createFetch') {
      read = rejection((await client()(server.url, { deadline, signal })).text())
    } else {
      const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
      closers.push(agent)
      const res = await request(server.url, {
        dispatcher: agent.compose(deadlineInterceptor({ bodyTimeoutMs: 0 })),
        deadline,
        signal,
      } as never)
      read = rejection(res.body.text())
    }
    end({ parent, deadline, clock })
    expect(await read).toMatchObject({ code })
    await server.clientGone(0)

    expect(ends()).toEqual([{ statusCode: 200, errorCode: code, stoppedBy: undefined }])
    expect(events.skipped.map((m) => m.why)).toEqual([why])
  },
)

it.each([
  ['a ClientClosedError of its own', () => new ClientClosedError(), 'CLIENT_CLOSED', 'caller'],
  [
    "another deadline's expiry (a DeadlineExceededError: a deadline's end, whichever signal carried it, as llm says)",
    () => new DeadlineExceededError({ budgetMs: 5, elapsedMs: 5 }),
    'DEADLINE_EXCEEDED',
    undefined,
  ],
] as const)(
  "createFetch: the caller's own signal aborted mid-body with %s: told by where it came from",
  async (_what, reason, code, stoppedBy) => {
    const server = await upstream({ type: 'headers-then-stall' })
    using deadline = Deadline.after(30_000)
    events = recordEgress()
    const caller = new AbortController()
    const res = await client()(server.url, { deadline, signal: caller.signal })
    const read = rejection(res.text())
    caller.abort(reason())
    expect(await read).toMatchObject({ code })
    await server.clientGone(0)

    expect(ends()).toEqual([{ statusCode: 200, errorCode: code, stoppedBy }])
  },
)
