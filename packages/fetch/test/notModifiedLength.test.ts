import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { Agent, request } from 'undici'
import { expect, it } from 'vitest'
import {
  createConnector,
  createFetch,
  deadlineInterceptor,
  type EgressAttemptEndMessage,
  fetchChannels,
} from '../src/index.js'
import type { EgressEvents } from './helpers.js'
import { useCleanup } from './support/useCleanup.js'

// A 304 may carry the Content-Length of the representation it stands for
// (RFC 9110 §8.6: "the number of octets that would have been sent" in a
// 200), and has no body. undici 7's HTTP/1.1 parser fails such an answer
// with `UND_ERR_RES_CONTENT_LENGTH_MISMATCH` once its empty message ends
// (it spares HEAD alone). undici's fetch hands the caller its 304 all the
// same — a 304 has no body to fail — but the attempt ended with that error:
// `attempt-end` said `errorCode: 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH'`,
// `phase: 'body'` (an errored egress span) and a `retry-skipped`
// (`after-first-byte`) followed, for every revalidation that was answered
// "not modified". Through the interceptor, undici's `request()` failed the
// 304 itself. The answer is complete (RFC 9112 §6.3: a 204 or 304 ends with
// its headers, whatever they say): its attempt ends with its status. A 204
// must send no Content-Length, yet one that does is as complete.

const cleanup = useCleanup()
let events: EgressEvents | undefined

/** Answers 304 with the length of the 1000-byte representation it has not sent (`/204`: a 204 so). */
async function notModifiedServer(): Promise<string> {
  const server: Server = createServer((req, res) => {
    res.writeHead(req.url === '/204' ? 204 : 304, { etag: '"v1"', 'content-length': '1000' })
    res.end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  cleanup.keep({
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/doc`
}

/** The next attempt-end, whenever it is published. */
function nextAttemptEnd(): Promise<EgressAttemptEndMessage> {
  return new Promise((resolve) => {
    const onEnd = (message: EgressAttemptEndMessage) => {
      fetchChannels.attemptEnd.unsubscribe(onEnd)
      resolve(message)
    }
    fetchChannels.attemptEnd.subscribe(onEnd)
  })
}

it('createFetch: a 304 with a Content-Length ends its attempt with its status, no error', async () => {
  const url = await notModifiedServer()
  const fetch = createFetch()
  cleanup.keep(fetch)
  events = cleanup.record()
  const ended = nextAttemptEnd()
  using deadline = Deadline.after(30_000)
  const res = await fetch(url, { deadline, headers: { 'if-none-match': '"v1"' } })
  expect(res.status).toBe(304)
  expect(await res.text()).toBe('')
  const end = await ended
  expect({ statusCode: end.statusCode, errorCode: end.errorCode, phase: end.phase }).toEqual({
    statusCode: 304,
    errorCode: undefined,
    phase: undefined,
  })
  expect(events.skipped).toEqual([])
})

it('createFetch: a 204 that gives a Content-Length is as complete', async () => {
  const url = await notModifiedServer()
  const fetch = createFetch()
  cleanup.keep(fetch)
  events = cleanup.record()
  const ended = nextAttemptEnd()
  using deadline = Deadline.after(30_000)
  const res = await fetch(new URL('/204', url), { deadline })
  expect(res.status).toBe(204)
  const end = await ended
  expect({ statusCode: end.statusCode, errorCode: end.errorCode }).toEqual({
    statusCode: 204,
    errorCode: undefined,
  })
  expect(events.skipped).toEqual([])
})

it("the interceptor: undici's request() is answered 304, not failed", async () => {
  const url = await notModifiedServer()
  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  cleanup.keep(agent)
  const dispatcher = agent.compose(deadlineInterceptor())
  events = cleanup.record()
  const ended = nextAttemptEnd()
  using deadline = Deadline.after(30_000)
  const res = await request(url, {
    dispatcher,
    deadline,
    headers: { 'if-none-match': '"v1"' },
  } as never)
  expect(res.statusCode).toBe(304)
  expect(await res.body.text()).toBe('')
  const end = await ended
  expect({ statusCode: end.statusCode, errorCode: end.errorCode }).toEqual({
    statusCode: 304,
    errorCode: undefined,
  })
  expect(events.skipped).toEqual([])
})

it("the interceptor: a handler of undici's second API hears the 304 end, not an error", async () => {
  const url = new URL(await notModifiedServer())
  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  cleanup.keep(agent)
  const dispatcher = agent.compose(deadlineInterceptor())
  using deadline = Deadline.after(30_000)
  const heard = await new Promise<string[]>((resolve) => {
    const seen: string[] = []
    dispatcher.dispatch(
      { origin: url.origin, path: url.pathname, method: 'GET', deadline } as never,
      {
        onRequestStart() {},
        onResponseStart(_controller, status) {
          seen.push(`start ${status}`)
        },
        onResponseData() {},
        onResponseEnd() {
          seen.push('end')
          resolve(seen)
        },
        onResponseError(_controller, error) {
          seen.push(`error ${(error as { code?: string }).code}`)
          resolve(seen)
        },
      },
    )
  })
  expect(heard).toEqual(['start 304', 'end'])
})

it('a 304 whose server closes before its headers end is still a failure', async () => {
  // Only the complete empty answer is spared: a body-less status whose
  // header block is cut is no answer (undici's own error, retried or not
  // by the rules as before). Here: a GET, so it is retried once, then fails.
  const server = createServer()
  server.on('connection', (socket) => {
    socket.once('data', () => socket.end('HTTP/1.1 304 Not Modified\r\ncontent-length: 10'))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  cleanup.keep({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) })
  const fetch = createFetch()
  cleanup.keep(fetch)
  using deadline = Deadline.after(30_000)
  await expect(
    fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { deadline }),
  ).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' })
})
