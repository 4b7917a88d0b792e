import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { createServer, type Server, type Socket } from 'node:net'
import { Deadline } from '@hourglass/core'
import { Agent, request } from 'undici'
import { expect, it } from 'vitest'
import {
  createConnector,
  createFetch,
  deadlineInterceptor,
  type EgressAttemptEndMessage,
  fetchChannels,
  probe,
} from '../src/index.js'
import { useCleanup } from './support/useCleanup.js'

// A 204 that gives a non-zero Content-Length (with or without bytes after
// it): undici fails the answer for the body it never has, a turn later,
// when the socket it destroyed closes (notModifiedLength.test.ts: the
// attempt then ends with its status). fetch had handed the caller its 204
// with no body to read by then: `probe()` read the body, found the attempt
// still running, took no sample, and read its figures off none — `TypeError:
// Cannot read properties of undefined (reading 'medianMs')`. A 204 or 304 is
// complete with its headers: its attempt ends there. And a 205 (a null-body
// status for fetch, not for the wire) whose body undici still reads: probe
// waits for its attempt, and a 205 cut short fails the probe with the
// attempt's error.

const cleanup = useCleanup()

/** A server that answers every request with `answer` as written, then closes (or keeps the socket, `keep`). */
async function raw(answer: string, keep = false): Promise<string> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.once('data', () => (keep ? socket.write(answer) : socket.end(answer)))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  cleanup.keep({
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
}

const NO_CONTENT_5 = 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n'

/** Every attempt-end published until `stop()`. */
function attemptEnds(): { ends: EgressAttemptEndMessage[]; stop(): void } {
  const ends: EgressAttemptEndMessage[] = []
  const onEnd = (message: EgressAttemptEndMessage) => ends.push(message)
  fetchChannels.attemptEnd.subscribe(onEnd)
  cleanup.keep({ close: () => fetchChannels.attemptEnd.unsubscribe(onEnd) })
  return { ends, stop: () => fetchChannels.attemptEnd.unsubscribe(onEnd) }
}

const outcome = (m: EgressAttemptEndMessage) => ({ status: m.statusCode, error: m.errorCode })

for (const [name, answer] of [
  ['no bytes after it', NO_CONTENT_5],
  ['bytes after it', `${NO_CONTENT_5}hello`],
] as const) {
  it(`probe: a 204 with a Content-Length and ${name} is a sample of status 204`, async () => {
    const url = await raw(answer)
    const result = await probe(url, { warmup: 0, samples: 2, callTimeoutMs: 10_000 })
    expect(result.samples.map((s) => s.status)).toEqual([204, 204])
    expect(result.phases.headers.samples).toBe(2)
  })
}

it('createFetch: the 204 attempt has ended with its status when the caller has the answer', async () => {
  const url = await raw(NO_CONTENT_5, true)
  const fetch = cleanup.keep(createFetch())
  const { ends } = attemptEnds()
  using deadline = Deadline.after(30_000)
  const res = await fetch(url, { deadline })
  expect(res.status).toBe(204)
  expect(ends.map(outcome)).toEqual([{ status: 204, error: undefined }])
  expect(await res.arrayBuffer()).toHaveProperty('byteLength', 0)
})

it('the interceptor: request() has the 204 with its attempt ended, and an empty body', async () => {
  const url = await raw(`${NO_CONTENT_5}hello`)
  const agent = cleanup.keep(new Agent({ connect: createConnector() }))
  const dispatcher = agent.compose(deadlineInterceptor())
  const { ends } = attemptEnds()
  using deadline = Deadline.after(30_000)
  const res = await request(url, { dispatcher, deadline } as never)
  expect(res.statusCode).toBe(204)
  expect(ends.map(outcome)).toEqual([{ status: 204, error: undefined }])
  expect(await res.body.text()).toBe('')
  expect(ends).toHaveLength(1)
})

it('probe: a 205 whose body undici reads after fetch handed out none is a sample of status 205', async () => {
  const url = await raw('HTTP/1.1 205 Reset Content\r\nContent-Length: 5\r\n\r\nhello')
  const result = await probe(url, { warmup: 0, samples: 1, callTimeoutMs: 10_000 })
  expect(result.samples.map((s) => s.status)).toEqual([205])
})

it('probe: a 205 cut short of its Content-Length fails with the attempt’s error, not a TypeError', async () => {
  const url = await raw('HTTP/1.1 205 Reset Content\r\nContent-Length: 5\r\n\r\n')
  const error = await probe(url, { warmup: 0, samples: 1, callTimeoutMs: 10_000 }).catch(
    (e: unknown) => e,
  )
  expect(error).not.toBeInstanceOf(TypeError)
  expect(error).toMatchObject({ code: 'UND_ERR_SOCKET' })
})

it('probe: a HEAD answered with a Content-Length is a sample', async () => {
  const url = await raw('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n')
  const result = await probe(url, { method: 'HEAD', warmup: 0, samples: 1, callTimeoutMs: 10_000 })
  expect(result.samples.map((s) => s.status)).toEqual([200])
})

it('the interceptor: a caller that stops a 204 it has (its attempt ended with the headers) has no retry announced or skipped', async () => {
  const url = await raw(NO_CONTENT_5, true)
  const agent = cleanup.keep(new Agent({ connect: createConnector() }))
  const dispatcher = agent.compose(deadlineInterceptor())
  const { ends } = attemptEnds()
  const decisions: string[] = []
  const onSkipped = (m: { why: string }) => decisions.push(`retry-skipped ${m.why}`)
  const onRetry = () => decisions.push('retry')
  fetchChannels.retrySkipped.subscribe(onSkipped as never)
  fetchChannels.retry.subscribe(onRetry)
  cleanup.keep({
    close: () => {
      fetchChannels.retrySkipped.unsubscribe(onSkipped as never)
      fetchChannels.retry.unsubscribe(onRetry)
    },
  })
  using deadline = Deadline.after(30_000)
  const stop = new AbortController()
  const res = await request(url, { dispatcher, deadline, signal: stop.signal } as never)
  expect(res.statusCode).toBe(204)
  stop.abort(new Error('the caller stops'))
  // The body fails with the caller's reason once the handler has been told.
  await res.body.text().catch(() => {})
  expect(decisions).toEqual([])
  expect(ends.map(outcome)).toEqual([{ status: 204, error: undefined }])
})
