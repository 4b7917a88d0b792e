import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

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
