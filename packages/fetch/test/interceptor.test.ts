import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import {
  ClientClosedError,
  Deadline,
  isDeadlineExceeded,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, FormData, request, upgrade } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createConnector,
  type DeadlineDispatchOptions,
  deadlineInterceptor,
  isHeadersTimeout,
  type LookupFunction,
} from '../src/index.js'
import { type EgressEvents, nextRetry, recordEgress, rejection } from './helpers.js'

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  closers.push(server)
  return server
}
function agent(options: Parameters<typeof deadlineInterceptor>[0] = {}) {
  const base = new Agent({ connect: createConnector(options) })
  closers.push(base)
  return base.compose(deadlineInterceptor(options))
}

describe('deadlineInterceptor with undici.request', () => {
  it('propagates the current deadline as x-deadline-remaining-ms', async () => {
    const server = await serve({ type: 'respond', body: 'hi' })
    const dispatcher = agent()
    const deadline = Deadline.after(800)
    const { body } = await runWithDeadline(deadline, () => request(server.url, { dispatcher }))
    expect(await body.text()).toBe('hi')
    const sent = Number(server.records[0]?.headers['x-deadline-remaining-ms'])
    expect(sent).toBeGreaterThan(500)
    expect(sent).toBeLessThanOrEqual(800)
  })

  it('takes an explicit deadline in the dispatch options and stops with DEADLINE_EXCEEDED', async () => {
    const server = await serve({ type: 'hang' })
    const options = {
      dispatcher: agent(),
      deadline: Deadline.after(150),
    } as DeadlineDispatchOptions
    const error = await rejection(request(server.url, options as Parameters<typeof request>[1]))
    expect(isDeadlineExceeded(error)).toBe(true)
    expect((await server.clientGone(0)).workingWhenClientLeft).toBe(true)
  })

  it('retries a headers timeout with 0 bytes once for GET, transparently to the caller', async () => {
    events = recordEgress()
    const server = await serve((_r, i) =>
      i === 0 ? { type: 'hang' } : { type: 'respond', body: 'again' },
    )
    const { statusCode, body } = await request(server.url, {
      dispatcher: agent({ headersTimeoutMs: 150 }),
    })
    expect(statusCode).toBe(200)
    expect(await body.text()).toBe('again')
    expect(events.retries).toMatchObject([{ reason: 'HEADERS_TIMEOUT', attempt: 2 }])
  })

  it('does not retry a POST headers timeout', async () => {
    const server = await serve((_r, i) => (i === 0 ? { type: 'hang' } : { type: 'respond' }))
    const error = await rejection(
      request(server.url, {
        method: 'POST',
        body: 'x',
        dispatcher: agent({ headersTimeoutMs: 150 }),
      }),
    )
    expect(isHeadersTimeout(error)).toBe(true)
    expect(server.records).toHaveLength(1)
  })

  it('a pending retry ends at once when the caller aborts, and nothing is sent after that', async () => {
    events = recordEgress()
    const server = await serve((_r, i) =>
      i === 0 ? { type: 'retry-after', status: 503, retryAfter: 1 } : { type: 'respond' },
    )
    // The interceptor's waits run on a clock that moves only when told to.
    const clock = new ManualClock(performance.now())
    const controller = new AbortController()
    const retrying = nextRetry()
    const pending = request(server.url, {
      dispatcher: agent({ clock, retry: { statuses: [503] } }),
      signal: controller.signal,
    })
    await retrying // the 503 came back and a retry after 1 s was decided
    controller.abort()
    const error = await rejection(pending)
    expect((error as Error).name).toBe('AbortError')
    // Had the retry survived the abort, moving past its wait would send it now,
    // ahead of the control request below on the same server.
    clock.advance(2000)
    const control = await request(server.url, { dispatcher: agent() })
    await control.body.text()
    expect(server.records).toHaveLength(2) // the 503, then the control: no retry
  })

  // undici's request() rejects with the signal's reason as it is, an Error
  // or not (`abort('shutdown')` rejects with 'shutdown'); the interceptor
  // wrapped any other value in an Error, so a caller matching on its own
  // reason (`error === signal.reason`) missed it.
  it("the caller's abort reason, an Error or not, is what the call rejects with", async () => {
    const server = await serve({ type: 'hang' })
    const dispatcher = agent()
    const before = await rejection(
      request(server.url, { dispatcher, signal: AbortSignal.abort('shutdown') }),
    )
    const controller = new AbortController()
    const during = rejection(request(server.url, { dispatcher, signal: controller.signal }))
    await server.request(0) // it is on the server: the abort cuts it in flight
    controller.abort(42)
    expect({ before, during: await during }).toEqual({ before: 'shutdown', during: 42 })
  })

  it("a falsy abort reason (0, null) rejects with undici's RequestAbortedError, as undici alone does (it resolved { opaque })", async () => {
    const server = await serve({ type: 'hang' })
    const dispatcher = agent()
    const before = await rejection(
      request(server.url, { dispatcher, signal: AbortSignal.abort(null) }),
    )
    const controller = new AbortController()
    const during = rejection(request(server.url, { dispatcher, signal: controller.signal }))
    await server.request(0)
    controller.abort(0)
    const codes = [before, await during].map((e) => (e as { code?: string } | undefined)?.code)
    expect(codes).toEqual(['UND_ERR_ABORTED', 'UND_ERR_ABORTED'])
  })

  it('a pending retry ends at once when the deadline ends (here: cancelled), and nothing is sent after that', async () => {
    const server = await serve((_r, i) =>
      i === 0 ? { type: 'retry-after', status: 503, retryAfter: 1 } : { type: 'respond' },
    )
    const clock = new ManualClock(performance.now())
    const deadline = Deadline.after(5000, { clock })
    const retrying = nextRetry()
    const pending = request(server.url, {
      dispatcher: agent({ clock, retry: { statuses: [503] } }),
      deadline,
    } as Parameters<typeof request>[1])
    await retrying
    const reason = new ClientClosedError()
    deadline.cancel(reason) // e.g. the inbound client left: the deadline ends mid-wait
    expect(await rejection(pending)).toBe(reason)
    clock.advance(2000)
    const control = await request(server.url, { dispatcher: agent() })
    await control.body.text()
    expect(server.records).toHaveLength(2)
  })

  it('retries a fast connect failure once', async () => {
    events = recordEgress()
    const server = await serve({ type: 'respond', body: 'up' })
    const answers = ['127.0.0.2', '127.0.0.1']
    const lookup: LookupFunction = (_h, _o, cb) => cb(null, answers.shift()!, 4)
    const { body } = await request(`http://svc.test:${server.port}/`, {
      dispatcher: agent({ lookup }),
    })
    expect(await body.text()).toBe('up')
    expect(events.retries).toMatchObject([{ reason: 'CONNECT_FAILED' }])
  })

  // undici turns an ArrayBuffer, a DataView, a Blob or a FormData into bytes
  // afresh for every request it writes, as it does a string: each can be sent
  // twice. Only a string, null or a Uint8Array was taken for one, so a 503
  // answered to a Blob upload was returned, `body-not-replayable`, where the
  // same call with a string was retried.
  it('an in-memory body of any kind undici accepts is sent again by a status retry', async () => {
    const received: Record<string, string[]> = {}
    const server = createServer(async (req, res) => {
      let body = ''
      for await (const chunk of req) body += chunk
      const kind = String(req.headers['x-kind'])
      const sent = received[kind] ?? []
      received[kind] = sent
      sent.push(body)
      res.writeHead(sent.length === 1 ? 503 : 200, { 'retry-after': '0' }).end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) })
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    const dispatcher = agent({ retry: { statuses: [503] } })
    const form = new FormData()
    form.append('k', 'form')
    const given = {
      blob: new Blob(['blob']),
      arrayBuffer: new TextEncoder().encode('ab').buffer,
      dataView: new DataView(new TextEncoder().encode('view').buffer),
      formData: form,
    }
    const statuses: Record<string, number> = {}
    for (const [kind, body] of Object.entries(given)) {
      const headers = { 'x-kind': kind }
      const res = await request(url, { dispatcher, method: 'PUT', headers, body: body as never })
      await res.body.dump()
      statuses[kind] = res.statusCode
    }
    expect(statuses).toEqual({ blob: 200, arrayBuffer: 200, dataView: 200, formData: 200 })
    expect([received.blob, received.arrayBuffer, received.dataView]).toEqual([
      ['blob', 'blob'],
      ['ab', 'ab'],
      ['view', 'view'],
    ])
    expect(received.formData?.map((body) => body.includes('form'))).toEqual([true, true])
  })

  it("a stream tagged FormData (the form-data package's object) is a stream: its 503 is answered, not retried", async () => {
    const server = await serve({ type: 'retry-after', status: 503, retryAfter: 0 })
    const body = Readable.from(['k=form'])
    Object.defineProperty(body, Symbol.toStringTag, { value: 'FormData' })
    const res = await request(server.url, {
      dispatcher: agent({ retry: { statuses: [503] } }),
      method: 'PUT',
      body: body as never,
    })
    await res.body.dump()
    expect([res.statusCode, server.records.length]).toEqual([503, 1])
  })

  // An upgrade (undici's `upgrade()`, its WebSocket) is answered with a 101,
  // not with response headers: its attempt ended with no status at all, so
  // its egress span had no `http.response.status_code`.
  it("an upgrade's attempt ends with the 101 it was answered", async () => {
    const server = createServer()
    server.on('upgrade', (_req, socket) => {
      socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) })
    events = recordEgress()
    const { port } = server.address() as AddressInfo
    const { socket } = await upgrade(`http://127.0.0.1:${port}/`, {
      dispatcher: agent(),
      protocol: 'x',
    })
    socket.destroy()
    expect(events.ends.map(({ statusCode, errorCode }) => ({ statusCode, errorCode }))).toEqual([
      { statusCode: 101, errorCode: undefined },
    ])
  })
})

describe('the connector finds the attempt it connects for', () => {
  it.each([
    { kind: 'a string, connected for during dispatch', body: () => 'x' },
    {
      kind: 'a stream, connected for a microtask after dispatch',
      body: () => Readable.from(['x']),
    },
  ])(
    'body $kind: the DNS lookup is the attempt’s dns phase, ended by its deadline',
    async ({ body }) => {
      events = recordEgress()
      let lookups = 0
      const lookup: LookupFunction = () => {
        lookups++ // never answers
      }
      const error = await rejection(
        request('http://svc.test:1/', {
          dispatcher: agent({ lookup, dnsTimeoutMs: 10_000, retry: false }),
          method: 'POST',
          body: body(),
          // The lookup is called in the dispatch's own turn (or a microtask
          // after it), before any timer can fire: a short deadline still finds it.
          deadline: Deadline.after(100),
        } as Parameters<typeof request>[1] & DeadlineDispatchOptions),
      )
      expect(isDeadlineExceeded(error)).toBe(true)
      expect(lookups).toBe(1)
      // Unclaimed, the attempt would have ended still queued (no phase) while
      // the connector went on looking up for 10 s on its own.
      expect(events.ends).toMatchObject([
        { attempt: 1, phase: 'dns', errorCode: 'DEADLINE_EXCEEDED' },
      ])
    },
  )
})

/** An interceptor above ours whose handler speaks only undici's second handler API. */
const newApiOnly: Parameters<Agent['compose']>[0] = (dispatch) => (opts, handler) =>
  dispatch(opts, {
    onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
    onResponseStart: (controller, status, headers, message) =>
      handler.onResponseStart?.(controller, status, headers, message),
    onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
    onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
    onResponseError: (controller, error) => handler.onResponseError?.(controller, error),
  })

describe.each([
  { api: "undici's first handler API (request()'s own handler)", above: [] },
  { api: 'the second handler API only (an interceptor above ours)', above: [newApiOnly] },
])('the attempt handler, inner handler in $api', ({ above }) => {
  function dispatcherWith(options: Parameters<typeof deadlineInterceptor>[0]) {
    const base = new Agent({ connect: createConnector(options) })
    closers.push(base)
    return base.compose(deadlineInterceptor(options), ...above)
  }

  it('a slow reader is not a silent server: a body paused by backpressure does not time out', async () => {
    // 4 MB at once: the reader's buffer fills, undici pauses the socket, and
    // the reader takes 2.5 × bodyTimeoutMs before it starts reading: a body
    // timer left running through the pause fires well before that.
    const payload = Buffer.alloc(4 * 2 ** 20, 'x')
    const server = createServer((_req, res) => res.end(payload))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) })
    const { port } = server.address() as AddressInfo
    const res = await request(`http://127.0.0.1:${port}/`, {
      dispatcher: dispatcherWith({ bodyTimeoutMs: 100 }),
      deadline: Deadline.after(5000),
    } as DeadlineDispatchOptions as Parameters<typeof request>[1])
    await new Promise((resolve) => setTimeout(resolve, 250))
    const body = Buffer.from(await res.body.arrayBuffer())
    expect(body.length).toBe(payload.length)
  })

  it('a body that goes quiet while the reader reads fails with BODY_TIMEOUT', async () => {
    const server = await serve({ type: 'bytes-then-stall', bytes: 100 })
    const res = await request(server.url, {
      dispatcher: dispatcherWith({ bodyTimeoutMs: 150 }),
      deadline: Deadline.after(5000),
    } as DeadlineDispatchOptions as Parameters<typeof request>[1])
    expect(res.statusCode).toBe(200)
    const error = await rejection(res.body.arrayBuffer())
    expect(error).toMatchObject({ code: 'BODY_TIMEOUT', bytesReceived: 100 })
  })

  it('a 503 with Retry-After: 0 is retried, and the caller sees only the 200', async () => {
    const server = await serve((_r, i) =>
      i === 0
        ? { type: 'retry-after', status: 503, retryAfter: 0 }
        : { type: 'respond', body: 'ok' },
    )
    const res = await request(server.url, {
      dispatcher: dispatcherWith({ retry: { statuses: [503] } }),
      deadline: Deadline.after(5000),
    } as DeadlineDispatchOptions as Parameters<typeof request>[1])
    expect(res.statusCode).toBe(200)
    expect(await res.body.text()).toBe('ok')
    expect(server.records).toHaveLength(2)
  })

  it('the caller aborting mid-body ends the read with its reason and the upstream sees the client leave', async () => {
    const server = await serve({ type: 'bytes-then-stall', bytes: 100 })
    const controller = new AbortController()
    const res = await request(server.url, {
      dispatcher: dispatcherWith({}),
      deadline: Deadline.after(5000),
      signal: controller.signal,
    } as DeadlineDispatchOptions as Parameters<typeof request>[1])
    const reading = rejection(res.body.arrayBuffer())
    controller.abort(new Error('caller left'))
    expect(await reading).toMatchObject({ message: 'caller left' })
    expect((await server.clientGone(0)).workingWhenClientLeft).toBe(true)
  })
})
