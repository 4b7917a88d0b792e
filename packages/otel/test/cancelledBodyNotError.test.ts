import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A caller that stops reading a response it got — `res.body.cancel()` once
 * the status and headers told it enough, or after the part it wanted — has
 * not seen the call fail: the HTTP conventions make a span ERROR for a 5xx
 * or a request that failed, and this answer came. Its egress span ended
 * ERROR with `error.type` `AbortError`, as a call cut by the network would.
 * A body the deadline or the network cut stays an error.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
let closers: { close(): Promise<void> }[] = []

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  stop()
  await Promise.all(closers.map((c) => c.close()))
  closers = []
  await otel.shutdown()
})

async function upstream(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  closers.push(server)
  return server
}

/** createFetch with no body idle limit (a stalled body ends by what the test does) and no retry. */
function client() {
  const fetch = createFetch({ bodyTimeoutMs: 0, retry: false })
  closers.push(fetch)
  return fetch
}

/** The one egress span, once it has ended. */
async function egressSpan(): Promise<ReadableSpan> {
  const spans = await otel.spansWhere((s) => s.some((x) => x.name === 'deadline.egress GET'))
  const found = spans.filter((s) => s.name === 'deadline.egress GET')
  expect(found).toHaveLength(1)
  return found[0] as ReadableSpan
}

describe("the caller's own cancel of a 2xx body", () => {
  it('with nothing read: the span is not an error (status UNSET, no error.type), and says where it stopped', async () => {
    const server = await upstream({ type: 'headers-then-stall' })
    using deadline = Deadline.after(30_000)
    const res = await client()(server.url, { deadline })
    expect(res.status).toBe(200)
    await res.body?.cancel()

    const span = await egressSpan()
    expect(span.status.code).toBe(SpanStatusCode.UNSET)
    expect(span.attributes).not.toHaveProperty('error.type')
    expect(span.attributes).toMatchObject({
      'http.response.status_code': 200,
      'hourglass.deadline.phase': 'body',
      'hourglass.deadline.bytes_received': 0,
    })
  })

  it('after reading part of it: the same, with the bytes it read', async () => {
    const server = await upstream({ type: 'bytes-then-stall', bytes: 64 })
    using deadline = Deadline.after(30_000)
    const res = await client()(server.url, { deadline })
    const reader = res.body?.getReader()
    const first = await reader?.read()
    expect(first?.value?.byteLength).toBeGreaterThan(0)
    await reader?.cancel()

    const span = await egressSpan()
    expect(span.status.code).toBe(SpanStatusCode.UNSET)
    expect(span.attributes).not.toHaveProperty('error.type')
    expect(span.attributes['hourglass.deadline.phase']).toBe('body')
    expect(span.attributes['hourglass.deadline.bytes_received']).toBeGreaterThan(0)
  })

  it('by aborting its signal while it read: the same', async () => {
    const server = await upstream({ type: 'headers-then-stall' })
    using deadline = Deadline.after(30_000)
    const controller = new AbortController()
    const res = await client()(server.url, { deadline, signal: controller.signal })
    const read = res.text().then(
      () => undefined,
      (error: unknown) => error,
    )
    controller.abort()
    expect(await read).toMatchObject({ name: 'AbortError' })

    const span = await egressSpan()
    expect(span.status.code).toBe(SpanStatusCode.UNSET)
    expect(span.attributes).not.toHaveProperty('error.type')
    expect(span.attributes['hourglass.deadline.phase']).toBe('body')
  })

  it("with an abort of Node's own as its reason (code ABORT_ERR, a pipeline's signal): the same", async () => {
    const server = await upstream({ type: 'headers-then-stall' })
    using deadline = Deadline.after(30_000)
    const res = await client()(server.url, { deadline })
    await res.body?.cancel(
      Object.assign(new Error('The operation was aborted'), {
        name: 'AbortError',
        code: 'ABORT_ERR',
      }),
    )

    const span = await egressSpan()
    expect(span.status.code).toBe(SpanStatusCode.UNSET)
    expect(span.attributes).not.toHaveProperty('error.type')
  })

  it('with a reason of its own (`cancel(new Error("enough"))`): the same — fetch says the caller stopped it', async () => {
    const server = await upstream({ type: 'headers-then-stall' })
    using deadline = Deadline.after(30_000)
    const res = await client()(server.url, { deadline })
    await res.body?.cancel(new Error('enough'))

    const span = await egressSpan()
    expect(span.status.code).toBe(SpanStatusCode.UNSET)
    expect(span.attributes).not.toHaveProperty('error.type')
    expect(span.attributes['hourglass.deadline.phase']).toBe('body')
  })

  // Its span says the call did not fail; counted by the stop's code, it was
  // in no series of the metrics (no success, no skipped retry). Counted once
  // part of its body came, whatever the stop's reason; not a stop before any
  // (the status, then nothing), nor a 5xx.
  it('counts in hourglass.deadline.calls.succeeded once part of its body came, whatever the stop; not before any, nor a 5xx', async () => {
    const part = await upstream({ type: 'bytes-then-stall', bytes: 64 })
    const none = await upstream({ type: 'headers-then-stall' })
    const failed = await upstream({ type: 'headers-then-stall', status: 503 })
    using deadline = Deadline.after(30_000)
    const fetch = client()
    // The caller's own timeout after a first chunk (AbortSignal.timeout's reason).
    const controller = new AbortController()
    const res = await fetch(part.url, { deadline, signal: controller.signal })
    const reader = res.body?.getReader()
    expect((await reader?.read())?.value?.byteLength).toBeGreaterThan(0)
    controller.abort(new DOMException('The operation timed out.', 'TimeoutError'))
    await reader?.read().catch(() => undefined)
    const egressSpans = (n: number) =>
      otel.spansWhere((s) => s.filter((x) => x.name === 'deadline.egress GET').length === n)
    const succeeded = async () =>
      (await otel.points('hourglass.deadline.calls.succeeded')).map((p) => p.value)
    await egressSpans(1)
    expect(await succeeded()).toEqual([1])
    await (await fetch(none.url, { deadline })).body?.cancel()
    await (await fetch(failed.url, { deadline })).body?.cancel()
    await egressSpans(3)
    expect(await otel.points('hourglass.deadline.calls.succeeded')).toEqual([
      {
        attributes: { 'hourglass.deadline.attempt': 1, 'hourglass.deadline.call.kind': 'http' },
        value: 1,
      },
    ])
  })

  it('of a 5xx: still an error, by its status, not by the cancel', async () => {
    const server = await upstream({ type: 'headers-then-stall', status: 503 })
    using deadline = Deadline.after(30_000)
    const res = await client()(server.url, { deadline })
    expect(res.status).toBe(503)
    await res.body?.cancel()

    const span = await egressSpan()
    expect(span.status.code).toBe(SpanStatusCode.ERROR)
    expect(span.attributes['error.type']).toBe('503')
  })
})

describe('what stays an error', () => {
  it('a 2xx body the deadline cut: ERROR, DEADLINE_EXCEEDED', async () => {
    const server = await upstream({ type: 'headers-then-stall' })
    const clock = new ManualClock()
    const deadline = Deadline.after(5000, { clock })
    const res = await client()(server.url, { deadline })
    const read = res.text().then(
      () => undefined,
      (error: unknown) => error,
    )
    clock.advance(5000)
    expect(await read).toMatchObject({ code: 'DEADLINE_EXCEEDED' })

    const span = await egressSpan()
    expect(span.status.code).toBe(SpanStatusCode.ERROR)
    expect(span.attributes).toMatchObject({
      'http.response.status_code': 200,
      'error.type': 'DEADLINE_EXCEEDED',
      'hourglass.deadline.phase': 'body',
    })
  })

  it('a 2xx body the network cut: ERROR, with the failure', async () => {
    // Headers and a first part of a longer body, then the connection closes.
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': '1000' })
      res.write('first part', () => res.socket?.destroy())
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    closers.push({
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        }),
    })
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    using deadline = Deadline.after(30_000)
    const res = await client()(url, { deadline })
    await expect(res.text()).rejects.toThrow()

    const span = await egressSpan()
    expect(span.status.code).toBe(SpanStatusCode.ERROR)
    expect(span.attributes['error.type']).toEqual(expect.any(String))
    expect(span.attributes['error.type']).not.toBe('AbortError')
    expect(span.attributes['hourglass.deadline.phase']).toBe('body')
  })

  it("the caller's abort before any answer: ERROR, AbortError (the request failed)", async () => {
    const server = await upstream({ type: 'hang' })
    using deadline = Deadline.after(30_000)
    const controller = new AbortController()
    const answer = client()(server.url, { deadline, signal: controller.signal }).then(
      () => undefined,
      (error: unknown) => error,
    )
    await server.request(0)
    controller.abort()
    expect(await answer).toMatchObject({ name: 'AbortError' })

    const span = await egressSpan()
    expect(span.status.code).toBe(SpanStatusCode.ERROR)
    expect(span.attributes['error.type']).toBe('AbortError')
    expect(span.attributes).not.toHaveProperty('http.response.status_code')
  })
})
