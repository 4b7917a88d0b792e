import { getEventListeners } from 'node:events'
import { Deadline } from '@hourglass/core'
import { Agent, type Dispatcher, errors, request } from 'undici'
import { expect, it } from 'vitest'
import { listen } from '../../../test/support/listen.js'
import { createFetch, deadlineInterceptor } from '../src/index.js'
import { rejection } from './helpers.js'
import { useCleanup } from './support/useCleanup.js'

// A dispatcher beneath the deadline layer that throws as a request is handed
// to it — a caller's own interceptor (a token refresh that fails, a policy
// check), composed beneath — refuses that request: nothing was sent. Thrown
// on from a retry's dispatch, the throw escaped undici's callbacks (an
// uncaught exception, the call never settled); from the first, the attempt
// it had announced never ended, its listener on the caller's signal kept;
// and through createFetch an undici code the throw carried (a SocketError,
// `UND_ERR_SOCKET`) was read as the upstream's connection closed and sent
// again. Told as undici's own dispatchers tell a throw (its handler's
// error), never retried.

const cleanup = useCleanup()

/** Throws `error` at the `nth` request handed to it; passes the others on. */
function throwAt(nth: number, error: Error): Dispatcher.DispatcherComposeInterceptor {
  let count = 0
  return (dispatch) => (opts, handler) => {
    count += 1
    if (count === nth) throw error
    return dispatch(opts, handler)
  }
}

/** Answers 503 to every request; `seen.requests` counts them. */
async function busy(): Promise<{ url: string; seen: { requests: number } }> {
  const seen = { requests: 0 }
  const server = await listen((req, res) => {
    seen.requests += 1
    req.resume()
    res.writeHead(503).end('busy')
  })
  cleanup.keep(server)
  return { url: server.url, seen }
}

it('deadlineInterceptor: a throw at the retry’s dispatch fails the call with it, no uncaught exception', async () => {
  const { url, seen } = await busy()
  const refusal = new Error('token refresh failed')
  const agent = cleanup.keep(new Agent())
  const dispatcher = agent.compose(
    throwAt(2, refusal),
    deadlineInterceptor({ retry: { statuses: [503] } }),
  )
  const events = cleanup.record()
  const deadline = Deadline.after(5000)

  const failure = await rejection(request(url, { dispatcher, deadline } as never))
  deadline.dispose()

  expect(failure).toBe(refusal)
  expect(seen.requests).toBe(1)
  expect(events.ends.map((end) => [end.attempt, end.statusCode, end.errorCode])).toEqual([
    [1, 503, undefined],
    [2, undefined, 'Error'],
  ])
  expect(events.skipped.map((skip) => [skip.attempt, skip.why])).toEqual([[2, 'not-retryable']])
})

it('deadlineInterceptor: a throw at the first dispatch ends the attempt it announced and lets go of the signal', async () => {
  const { url, seen } = await busy()
  const refusal = new Error('policy refused')
  const agent = cleanup.keep(new Agent())
  const dispatcher = agent.compose(throwAt(1, refusal), deadlineInterceptor())
  const events = cleanup.record()
  const signal = new AbortController().signal

  const failure = await rejection(request(url, { dispatcher, signal }))

  expect(failure).toBe(refusal)
  expect(seen.requests).toBe(0)
  expect(events.attempts).toHaveLength(1)
  expect(events.ends.map((end) => end.errorCode)).toEqual(['Error'])
  expect(getEventListeners(signal, 'abort')).toHaveLength(0)
})

it('createFetch: an undici SocketError thrown by the dispatcher is not read as a closed connection, nor retried', async () => {
  const { url, seen } = await busy()
  const refusal = new errors.SocketError('refused by the caller’s own interceptor')
  const agent = cleanup.keep(new Agent())
  const fetch = createFetch({ dispatcher: agent.compose(throwAt(1, refusal)) })
  const events = cleanup.record()

  const failure = await rejection(fetch(url))

  expect(failure).toBe(refusal)
  expect(seen.requests).toBe(0)
  expect(events.retries).toEqual([])
  expect(events.attempts).toHaveLength(1)
  expect(events.skipped.map((skip) => [skip.reason, skip.why])).toEqual([
    ['UND_ERR_SOCKET', 'not-retryable'],
  ])
})

// Classified as an upstream failure, one of undici's timeouts thrown there
// became our HeadersTimeoutError for a request never sent (createFetch gave
// the thrown error), and the events named two different codes.
it('deadlineInterceptor: an undici timeout thrown by the dispatcher is the call’s failure as thrown, not our timeout', async () => {
  const { url, seen } = await busy()
  const refusal = new errors.HeadersTimeoutError('thrown beneath')
  const agent = cleanup.keep(new Agent())
  const dispatcher = agent.compose(throwAt(1, refusal), deadlineInterceptor())
  const events = cleanup.record()

  const failure = await rejection(request(url, { dispatcher }))

  expect(failure).toBe(refusal)
  expect(seen.requests).toBe(0)
  expect(events.ends.map((end) => end.errorCode)).toEqual(['UND_ERR_HEADERS_TIMEOUT'])
  expect(events.skipped.map((skip) => [skip.reason, skip.why])).toEqual([
    ['UND_ERR_HEADERS_TIMEOUT', 'not-retryable'],
  ])
})

// The interceptor used without compose() — wrapped around a dispatch of
// one's own, `deadlineInterceptor()(agent.dispatch.bind(agent))` — is handed
// the caller's handler as it is, which may speak undici's first API alone
// (`onError`, no `onResponseError`). A call ended before it is sent (its
// deadline already over, its caller gone during a retry's wait) was told
// only through `onResponseError`: such a handler heard nothing, and the
// request never settled.
it('deadlineInterceptor used directly: a call refused unsent reaches a first-API handler’s onError', async () => {
  const { url, seen } = await busy()
  const agent = cleanup.keep(new Agent())
  const dispatch = deadlineInterceptor()(agent.dispatch.bind(agent))
  const deadline = Deadline.after(0)
  // Bounded of its own: a handler told nothing fails here, saying so, not by the test's timeout.
  let bound: NodeJS.Timeout | undefined
  const told = await new Promise<unknown>((resolve) => {
    bound = setTimeout(() => resolve('the handler was told nothing'), 2000)
    dispatch(
      { origin: new URL(url).origin, path: '/', method: 'GET', deadline } as never,
      {
        onConnect: () => {},
        onHeaders: () => true,
        onData: () => true,
        onComplete: () => resolve('completed'),
        onError: resolve,
      } as unknown as Dispatcher.DispatchHandler,
    )
  }).finally(() => clearTimeout(bound))
  expect(told).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  expect(seen.requests).toBe(0)
})

// A closed-coded error thrown by the caller's own interceptor beneath is its
// refusal, not undici's closed Agent refusing a retry (the Agent here is
// open): the call fails with what was thrown, as any other throw there. It
// was read as the closed Agent's, and the reset that earned the retry came
// back in its place.
it('deadlineInterceptor: a ClientClosedError thrown beneath at a retry is the call’s failure, not the failure retried', async () => {
  let requests = 0
  const server = cleanup.keep(
    await listen((req, res) => {
      requests += 1
      if (requests === 1) req.socket.destroy()
      else res.end('ok')
    }),
  )
  const refusal = new errors.ClientClosedError()
  const agent = cleanup.keep(new Agent())
  const dispatcher = agent.compose(throwAt(2, refusal), deadlineInterceptor())
  const events = cleanup.record()

  const failure = await rejection(request(server.url, { dispatcher }))

  expect(failure).toBe(refusal)
  expect(requests).toBe(1)
  expect(events.ends.map((end) => [end.attempt, end.errorCode])).toEqual([
    [1, 'UND_ERR_SOCKET'],
    [2, 'UND_ERR_CLOSED'],
  ])
  expect(events.skipped.map((skip) => [skip.attempt, skip.reason, skip.why])).toEqual([
    [2, 'UND_ERR_CLOSED', 'not-retryable'],
  ])
})
