import type { IncomingMessage, ServerResponse } from 'node:http'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { Agent, type Dispatcher, interceptors, request } from 'undici'
import { expect, it } from 'vitest'
import { listen } from '../../../test/support/listen.js'
import { deadlineInterceptor } from '../src/index.js'
import { useCleanup } from './support/useCleanup.js'

// undici's redirect and retry interceptors composed outside
// deadlineInterceptor (as the README says) dispatch their next request from
// inside the handler callbacks the interceptor calls: undici runs those in
// the async context of whoever opened the socket. A caller under
// `runWithDeadline` (no `deadline` option) then had its hop or retry judged
// under that other request's deadline, or none: it carried that request's
// `x-deadline-remaining-ms` (59 955 where 2 999 were left), was bounded by
// its budget, and was sent after the caller's own deadline had ended. No
// timing here: a ManualClock moves only when the server says so.

const cleanup = useCleanup()

type Route = (req: IncomingMessage, res: ServerResponse) => void

/** A server that records each request's path and deadline header, then routes it. */
async function serve(route: Route): Promise<{ base: string; seen: string[][] }> {
  const seen: string[][] = []
  const server = await listen((req, res) => {
    req.resume()
    req.on('end', () => {
      seen.push([req.url ?? '', String(req.headers['x-deadline-remaining-ms'])])
      route(req, res)
    })
  })
  cleanup.keep(server)
  return { base: server.url, seen }
}

/** One connection, so the second caller reuses the socket the first one opened under its deadline. */
function oneConnection(outer: Dispatcher.DispatcherComposeInterceptor): Dispatcher {
  return cleanup.keep(new Agent({ connections: 1 })).compose(deadlineInterceptor(), outer)
}

/** A call made the way the README shows, under a current deadline (no `deadline` option). */
async function call(dispatcher: Dispatcher, url: string, deadline: Deadline, init = {}) {
  return runWithDeadline(deadline, async () => {
    const res = await request(url, { dispatcher, ...init })
    return { status: res.statusCode, text: await res.body.text() }
  })
}

/**
 * A call to `base` + `path` under a deadline of 3 s, made once a call under
 * 60 s (to /warm) opened the one connection: what each call got (the
 * second's error if it failed). Both deadlines are disposed after.
 */
async function afterWarm(
  clock: ManualClock,
  dispatcher: Dispatcher,
  base: string,
  path: string,
  init = {},
) {
  const first = Deadline.after(60_000, { clock })
  const warm = await call(dispatcher, `${base}/warm`, first)
  const second = Deadline.after(3000, { clock })
  const answer = await call(dispatcher, `${base}${path}`, second, init).catch((e: unknown) => e)
  first.dispose()
  second.dispose()
  return { warm, answer }
}

it('a redirect hop under the redirect interceptor outside carries its own caller’s deadline, not that of the request that opened the socket', async () => {
  const clock = new ManualClock()
  const { base, seen } = await serve((req, res) => {
    if (req.url === '/moved') res.writeHead(307, { location: '/target' }).end()
    else res.end('ok')
  })
  const dispatcher = oneConnection(interceptors.redirect({ maxRedirections: 3 }))
  const { warm, answer } = await afterWarm(clock, dispatcher, base, '/moved', {
    method: 'PUT',
    body: 'payload',
  })
  expect(warm).toEqual({ status: 200, text: 'ok' })
  expect(answer).toEqual({ status: 200, text: 'ok' })
  // Before: ['/target', '60000'], the first caller's budget.
  expect(seen).toEqual([
    ['/warm', '60000'],
    ['/moved', '3000'],
    ['/target', '3000'],
  ])
})

it('a redirect that arrives once its caller’s budget is spent is not followed', async () => {
  const clock = new ManualClock()
  const { base, seen } = await serve((req, res) => {
    if (req.url === '/moved') {
      // The server takes all but 2 ms of the second caller's budget to
      // redirect it: under the default minBudgetMs (5), nothing more is sent.
      clock.advance(2998)
      res.writeHead(307, { location: '/target' }).end()
    } else res.end('ok')
  })
  const dispatcher = oneConnection(interceptors.redirect({ maxRedirections: 3 }))
  const { answer: error } = await afterWarm(clock, dispatcher, base, '/moved')
  // Before: the hop went out under the first caller's 57 s and answered 200.
  expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  expect(seen.map(([path]) => path)).toEqual(['/warm', '/moved'])
})

it("undici's retry interceptor outside it sends its retry under its own caller's deadline", async () => {
  const clock = new ManualClock()
  let busy = true
  const { base, seen } = await serve((req, res) => {
    if (req.url === '/busy' && busy) {
      busy = false
      res.writeHead(503, { 'retry-after': '0' }).end()
    } else res.end('ok')
  })
  const dispatcher = oneConnection(
    interceptors.retry({ statusCodes: [503], maxRetries: 1, minTimeout: 0, timeoutFactor: 1 }),
  )
  const { answer } = await afterWarm(clock, dispatcher, base, '/busy')
  expect(answer).toEqual({ status: 200, text: 'ok' })
  // Before: ['/busy', '60000'] for the retry.
  expect(seen).toEqual([
    ['/warm', '60000'],
    ['/busy', '3000'],
    ['/busy', '3000'],
  ])
})

/**
 * A layer of the caller's own that speaks undici's first handler API (as
 * `request()`'s handler reaches the interceptor) and follows a 307 itself,
 * from `onComplete`: the same path through the interceptor's other handler.
 */
function legacyFollower(): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => {
    const inner = handler as unknown as Record<string, (...args: unknown[]) => unknown>
    let location: string | undefined
    const follower = {
      onConnect: (...args: unknown[]) => inner['onConnect']?.(...args),
      onHeaders(status: number, raw: Buffer[], resume: () => void, text: string) {
        const at = raw.findIndex((b, i) => i % 2 === 0 && b.toString().toLowerCase() === 'location')
        location = status === 307 && at >= 0 ? raw[at + 1]?.toString() : undefined
        return location === undefined ? inner['onHeaders']?.(status, raw, resume, text) : true
      },
      onData: (chunk: Buffer) => (location === undefined ? inner['onData']?.(chunk) : true),
      onComplete(trailers: unknown) {
        if (location === undefined) inner['onComplete']?.(trailers)
        else dispatch({ ...opts, path: location }, follower as never)
      },
      onError: (error: Error) => inner['onError']?.(error),
    }
    return dispatch(opts, follower as never)
  }
}

it('a layer outside it that speaks undici’s first handler API follows a redirect under its own caller’s deadline too', async () => {
  const clock = new ManualClock()
  const { base, seen } = await serve((req, res) => {
    if (req.url === '/moved') res.writeHead(307, { location: '/target' }).end()
    else res.end('ok')
  })
  const dispatcher = oneConnection(legacyFollower())
  const { answer } = await afterWarm(clock, dispatcher, base, '/moved')
  expect(answer).toEqual({ status: 200, text: 'ok' })
  expect(seen).toEqual([
    ['/warm', '60000'],
    ['/moved', '3000'],
    ['/target', '3000'],
  ])
})
