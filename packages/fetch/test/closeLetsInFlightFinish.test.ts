import type { IncomingMessage, ServerResponse } from 'node:http'
import { Agent, request } from 'undici'
import { expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'
import { recordEgress, useHttpServer } from './helpers.js'

const listen = useHttpServer()

/** A server that hands each request to the test, to be answered when the test says. */
async function held(): Promise<{
  url: string
  next: () => Promise<[IncomingMessage, ServerResponse]>
  requests: () => number
}> {
  let requests = 0
  const waiting: Array<(pair: [IncomingMessage, ServerResponse]) => void> = []
  const queued: Array<[IncomingMessage, ServerResponse]> = []
  const base = await listen((req, res) => {
    requests++
    const take = waiting.shift()
    if (take) take([req, res])
    else queued.push([req, res])
  })
  return {
    url: `${base}/`,
    next: () => {
      const ready = queued.shift()
      return ready ? Promise.resolve(ready) : new Promise((resolve) => waiting.push(resolve))
    },
    requests: () => requests,
  }
}

/**
 * fetch.close() lets a request in flight finish (undici's close). One whose
 * answer is a status the rules retry had that answer dropped and a retry
 * sent to the closed Agent: the caller got undici's "The client is closed"
 * in place of the server's 503, and a GET whose connection was reset, the
 * same in place of the reset.
 */
it('a 503 that arrives after fetch.close() is returned, not retried into ClientClosedError', async () => {
  const { url, next, requests } = await held()
  const fetch = createFetch({ retry: { statuses: [503] } })
  const events = recordEgress()
  try {
    const call = fetch(url)
    const [, res] = await next()
    const closed = fetch.close()
    res.writeHead(503).end('busy')
    const answer = await call
    expect(answer.status).toBe(503)
    expect(await answer.text()).toBe('busy')
    await closed
    expect(requests()).toBe(1)
    expect(events.retries).toEqual([])
    expect(events.skipped).toMatchObject([{ attempt: 1, reason: 'HTTP_503', why: 'aborted' }])
  } finally {
    events.stop()
  }
})

it('a GET reset before its answer after fetch.close() fails with the reset, not ClientClosedError', async () => {
  const { url, next, requests } = await held()
  const fetch = createFetch()
  const events = recordEgress()
  try {
    const call = fetch(url).then(
      () => 'answered',
      (error: unknown) => error,
    )
    const [req] = await next()
    const closed = fetch.close()
    req.socket.destroy()
    expect(await call).toMatchObject({ code: 'UND_ERR_SOCKET' })
    await closed
    expect(requests()).toBe(1)
    expect(events.retries).toEqual([])
  } finally {
    events.stop()
  }
})

it('a fetch given a dispatcher of its own still retries after close(): that one is not closed', async () => {
  const { url, next, requests } = await held()
  const own = createFetch()
  const fetch = createFetch({ dispatcher: own.dispatcher, retry: { statuses: [503] } })
  const call = fetch(url)
  const [, first] = await next()
  await fetch.close()
  first.writeHead(503).end('busy')
  const [, second] = await next()
  second.end('ok')
  const answer = await call
  expect(await answer.text()).toBe('ok')
  expect(requests()).toBe(2)
  await own.close()
})

/**
 * The same through the interceptor composed over an Agent of the caller's:
 * `agent.close()` lets the request in flight finish, and the retry its
 * failure earned went to the closed Agent, which refused it at once — the
 * caller got undici's "The client is closed" in place of the reset (or the
 * HEADERS_TIMEOUT) that ended its request. Nothing was sent again either way.
 */
it('through the interceptor, a GET reset after agent.close() fails with the reset, not ClientClosedError', async () => {
  const { url, next, requests } = await held()
  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  const dispatcher = agent.compose(deadlineInterceptor())
  const events = recordEgress()
  try {
    const call = request(url, { dispatcher }).then(
      () => 'answered',
      (error: unknown) => error,
    )
    const [req] = await next()
    const closed = agent.close()
    req.socket.destroy()
    expect(await call).toMatchObject({ code: 'UND_ERR_SOCKET' })
    await closed
    expect(requests()).toBe(1)
    // The retry was announced before undici refused it: a retry-skipped says it was never sent.
    expect(events.retries).toMatchObject([{ attempt: 2, reason: 'UND_ERR_SOCKET' }])
    expect(events.skipped).toMatchObject([{ attempt: 1, reason: 'UND_ERR_SOCKET', why: 'aborted' }])
    // And no attempt 2: refused as it was handed over, it was never made (as
    // createFetch({ dispatcher: agent }) tells it). Announced, it was counted a
    // retry made beside the skipped one, with an egress span ending in UND_ERR_CLOSED.
    expect(events.attempts.map((a) => [a.attempt, a.retryReason])).toEqual([[1, undefined]])
    expect(events.ends.map((end) => [end.attempt, end.errorCode])).toEqual([[1, 'UND_ERR_SOCKET']])
  } finally {
    events.stop()
    await agent.destroy()
  }
})

// The counterpart: the Agent open, the retry is made, and its attempt is
// announced as every retry is (its announcement waits only for the dispatch
// to pass the closed Agent's refusal).
it('through the interceptor, a GET reset with the Agent open is retried and its attempt announced', async () => {
  const { url, next, requests } = await held()
  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  const dispatcher = agent.compose(deadlineInterceptor())
  const events = recordEgress()
  try {
    const call = request(url, { dispatcher }).then((res) => res.body.text())
    const [first] = await next()
    first.socket.destroy()
    const [, second] = await next()
    second.end('ok')
    expect(await call).toBe('ok')
    expect(requests()).toBe(2)
    expect(events.attempts.map((a) => [a.attempt, a.retryReason])).toEqual([
      [1, undefined],
      [2, 'UND_ERR_SOCKET'],
    ])
    expect(events.ends.map((end) => [end.attempt, end.errorCode])).toEqual([
      [1, 'UND_ERR_SOCKET'],
      [2, undefined],
    ])
    expect(events.ends[1]?.handle).toBe(events.attempts[1]?.handle)
    expect(events.skipped).toEqual([])
  } finally {
    events.stop()
    await agent.close()
  }
})
