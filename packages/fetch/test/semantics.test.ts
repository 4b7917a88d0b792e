import { AsyncLocalStorage } from 'node:async_hooks'
import { ClientClosedError, Deadline } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request, Request as UndiciRequest } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createConnector,
  createFetch,
  deadlineInterceptor,
  type EgressAttemptEndMessage,
  fetchChannels,
  type HourglassFetch,
  isConnectError,
  isTooManyRedirects,
  type LookupFunction,
} from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'
import { frozenClock } from './support/frozenClock.js'

// What an undici/fetch user relies on that the retry rules must not break:
// a request that reached a server is not sent again unless it is safe to
// repeat, headers reach the wire as undici would send them (or undici's own
// error says why not), and a Request given to fetch is consumed as fetch
// consumes it. No test here measures time.

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
function client(options: Parameters<typeof createFetch>[0] = {}): HourglassFetch {
  const fetch = createFetch(options)
  closers.push(fetch)
  return fetch
}
function agent(options: Parameters<typeof deadlineInterceptor>[0] = {}) {
  const base = new Agent({ connect: createConnector(options) })
  closers.push(base)
  return base.compose(deadlineInterceptor(options))
}

// A refused connect measured as fast: see support/frozenClock.ts.
const frozen = frozenClock

describe('redirects (createFetch follows them inside one attempt)', () => {
  /** Answers every request with `status` to a port on 127.0.0.2 where nothing listens: refused at once. */
  async function redirectToRefused(status: number) {
    const server: FaultServer = await serve(() => ({
      type: 'respond',
      status,
      headers: { location: `http://127.0.0.2:${server.port}/done` },
    }))
    return server
  }

  it('a POST answered with 303 is not sent again when the redirect target refuses the connection', async () => {
    events = recordEgress()
    const server = await redirectToRefused(303)
    const error = await rejection(
      client({ clock: frozen })(server.url, { method: 'POST', body: 'order 42' }),
    )
    // The connect that failed fast was to the redirect target; the POST
    // itself reached the origin, which answered: sending it again would place
    // the order twice.
    expect(isConnectError(error)).toBe(true)
    expect(server.records.map((r) => r.method)).toEqual(['POST'])
    expect(events.retries).toHaveLength(0)
    expect(events.skipped).toMatchObject([{ reason: 'CONNECT_FAILED', why: 'not-idempotent' }])
  })

  it('a GET that redirected is still retried from its first URL (the control for the rule above)', async () => {
    events = recordEgress()
    const server = await redirectToRefused(302)
    const error = await rejection(client({ clock: frozen })(server.url))
    expect(isConnectError(error)).toBe(true)
    // The retry starts over at the URL the caller gave (fetch follows the
    // redirect again), not at the redirect target.
    expect(server.records.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /', 'GET /'])
    expect(events.retries).toMatchObject([{ attempt: 2, reason: 'CONNECT_FAILED' }])
  })

  it('a POST with an Idempotency-Key that redirected may be retried: the caller said it is safe', async () => {
    events = recordEgress()
    const server = await redirectToRefused(303)
    await rejection(
      client({ clock: frozen })(server.url, {
        method: 'POST',
        body: 'order 42',
        headers: { 'Idempotency-Key': 'order-42' },
      }),
    )
    expect(server.records.map((r) => r.method)).toEqual(['POST', 'POST'])
    expect(server.records[1]?.headers['idempotency-key']).toBe('order-42')
  })

  it('the deadline covers the whole chain: one that ends between two hops stops the next before it looks a name up', async () => {
    let lookedUp: (host: string) => void = () => {}
    const lookup = new Promise<string>((resolve) => {
      lookedUp = resolve
    })
    // The redirect target's name never resolves, and has no DNS limit of its
    // own: only the deadline can end a lookup of it.
    const never: LookupFunction = (host) => lookedUp(host)
    const server = await serve({
      type: 'respond',
      status: 302,
      headers: { location: 'http://never.test/next' },
    })
    const fetch = createFetch({ lookup: never, dnsTimeoutMs: 0 })
    closers.push({ close: () => fetch.dispatcher.destroy() })
    const deadline = Deadline.after(60_000)
    const reason = new ClientClosedError()
    // The first hop's end is the gap: its attempt is over, the next hop's
    // not yet made (e.g. the inbound client leaves just then).
    const onEnd = (message: unknown) => {
      if ((message as EgressAttemptEndMessage).statusCode === 302) deadline.cancel(reason)
    }
    fetchChannels.attemptEnd.subscribe(onEnd)
    events = recordEgress()
    try {
      const outcome = await Promise.race([
        rejection(fetch(server.url, { deadline })),
        lookup.then((host) => `looked up ${host}`),
      ])
      expect(outcome).toBe(reason)
      // One attempt was sent and ended; the stopped hop, never sent, is no
      // attempt: no `attempt-end` without its `attempt` (a span or a progress
      // count would otherwise see an end it never saw begin).
      const first = new URL(server.url).href
      expect(events.attempts.map((m) => m.url)).toEqual([first])
      expect(events.ends.map((m) => [m.url, m.statusCode])).toEqual([[first, 302]])
    } finally {
      fetchChannels.attemptEnd.unsubscribe(onEnd)
    }
  })

  it('a server that redirects to itself fails with TOO_MANY_REDIRECTS, and the loop is not walked again', async () => {
    events = recordEgress()
    const server = await serve({ type: 'respond', status: 302, headers: { location: '/' } })
    const error = await rejection(client()(server.url))
    expect(isTooManyRedirects(error)).toBe(true)
    expect(error).toMatchObject({ code: 'TOO_MANY_REDIRECTS', redirects: 20 })
    // undici's own error stays reachable as the cause.
    expect((error as Error).cause).toMatchObject({ message: 'redirect count exceeded' })
    // One attempt: the request and the 20 redirects fetch follows, no retry.
    expect(server.records).toHaveLength(21)
    expect(events.retries).toHaveLength(0)
    expect(events.skipped).toMatchObject([{ reason: 'TOO_MANY_REDIRECTS', why: 'not-retryable' }])
  })

  it('a chain longer than fetch follows fails the same way, though its end would answer', async () => {
    const server = await serve((r) => {
      const hop = Number(r.url.slice('/hop/'.length) || 0)
      return hop < 25
        ? { type: 'respond', status: 307, headers: { location: `/hop/${hop + 1}` } }
        : { type: 'respond', body: 'found it' }
    })
    const error = await rejection(client()(`${server.url}/hop/0`))
    expect(error).toMatchObject({ code: 'TOO_MANY_REDIRECTS', redirects: 20 })
    expect(server.records.map((r) => r.url)).toEqual(
      Array.from({ length: 21 }, (_, hop) => `/hop/${hop}`),
    )
  })
})

describe('Idempotency-Key: a key with no value is no key', () => {
  /** 503 first, then 200: with `statuses: [503]` a request safe to repeat is sent twice. */
  const busyThenOk = (_r: unknown, i: number) =>
    i === 0
      ? ({ type: 'respond', status: 503 } as const)
      : ({ type: 'respond', body: 'ok' } as const)

  it('interceptor: a POST whose idempotency-key is undefined (undici sends no such header) is not retried', async () => {
    events = recordEgress()
    const server = await serve(busyThenOk)
    const { statusCode, body } = await request(server.url, {
      method: 'POST',
      body: 'charge 10 EUR',
      // e.g. `{ 'idempotency-key': inbound.headers['idempotency-key'] }` when the inbound had none
      headers: { 'idempotency-key': undefined },
      dispatcher: agent({ retry: { statuses: [503] } }),
    })
    await body.text()
    expect(statusCode).toBe(503)
    expect(server.records).toHaveLength(1)
    expect(server.records[0]?.headers['idempotency-key']).toBeUndefined()
    expect(events.skipped).toMatchObject([{ reason: 'HTTP_503', why: 'not-idempotent' }])
  })

  it('interceptor: the same POST with a key is retried (the control for the rule above)', async () => {
    const server = await serve(busyThenOk)
    const { statusCode, body } = await request(server.url, {
      method: 'POST',
      body: 'charge 10 EUR',
      headers: { 'idempotency-key': 'charge-7' },
      dispatcher: agent({ retry: { statuses: [503] } }),
    })
    expect(await body.text()).toBe('ok')
    expect(statusCode).toBe(200)
    expect(server.records.map((r) => r.headers['idempotency-key'])).toEqual([
      'charge-7',
      'charge-7',
    ])
  })

  it('interceptor: headers given as a one-shot iterator (map.entries(), a generator) count and go out again on the retry', async () => {
    const server = await serve(busyThenOk)
    const headers = new Map([
      ['idempotency-key', 'charge-8'],
      ['authorization', 'Bearer t'],
    ]).entries()
    const { statusCode, body } = await request(server.url, {
      method: 'POST',
      body: 'charge 10 EUR',
      headers,
      dispatcher: agent({ retry: { statuses: [503] } }),
    })
    await body.text()
    // Before: the first send used the iterator up — the key was not seen
    // (a 503 answered, `not-idempotent`), and a retry went out with no headers.
    expect(statusCode).toBe(200)
    expect(
      server.records.map((r) => [r.headers['idempotency-key'], r.headers.authorization]),
    ).toEqual([
      ['charge-8', 'Bearer t'],
      ['charge-8', 'Bearer t'],
    ])
  })

  it('createFetch: headers given as a one-shot iterator count and go out again on the retry', async () => {
    const server = await serve(busyThenOk)
    const headers = new Map([
      ['idempotency-key', 'charge-9'],
      ['authorization', 'Bearer t'],
    ]).entries()
    const res = await client({ retry: { statuses: [503] } })(server.url, {
      method: 'POST',
      body: 'charge 10 EUR',
      headers: headers as unknown as Record<string, string>, // a sequence of pairs, as fetch takes one
    })
    await res.text()
    // Before: the 503 was answered (the key unseen), and a GET's retry went without its headers.
    expect(res.status).toBe(200)
    expect(
      server.records.map((r) => [r.headers['idempotency-key'], r.headers.authorization]),
    ).toEqual([
      ['charge-9', 'Bearer t'],
      ['charge-9', 'Bearer t'],
    ])
  })

  it('createFetch: an empty Idempotency-Key is not a key', async () => {
    const server = await serve(busyThenOk)
    const res = await client({ retry: { statuses: [503] } })(server.url, {
      method: 'POST',
      body: 'charge 10 EUR',
      headers: { 'Idempotency-Key': '' },
    })
    expect(res.status).toBe(503)
    await res.body?.cancel()
    expect(server.records).toHaveLength(1)
  })
})

describe('headers through the interceptor', () => {
  it('an odd-length header array is refused as undici refuses it, not sent with a header missing', async () => {
    const server = await serve({ type: 'respond' })
    // A [name, value] pair where undici wants a flat array: undici alone
    // rejects it ("headers array must be even"); the Authorization must not
    // silently vanish from the request instead.
    const pairs = [['authorization', 'Bearer secret']] as unknown as string[]
    const error = await rejection(request(server.url, { headers: pairs, dispatcher: agent() }))
    expect(error).toMatchObject({ code: 'UND_ERR_INVALID_ARG' })
    const odd = ['accept', 'text/plain', 'authorization']
    expect(
      await rejection(request(server.url, { headers: odd, dispatcher: agent() })),
    ).toMatchObject({ code: 'UND_ERR_INVALID_ARG' })
    expect(server.records).toHaveLength(0)
  })

  it('header values and shapes undici refuses are refused, and the rest go out as undici sends them', async () => {
    const server = await serve({ type: 'respond' })
    const deadline = Deadline.after(10_000)
    // undici alone: "invalid x-a header" / "headers must be …" (we sent
    // "[object Object]", or the request with no headers at all).
    const refused: unknown[] = [
      { 'x-a': {} },
      { 'x-a': ['1', {}] },
      'x-a: 1',
      new Set([['x-a', '1', '2']]),
    ]
    for (const headers of refused) {
      const error = await rejection(
        request(server.url, { headers: headers as never, deadline, dispatcher: agent() } as never),
      )
      expect(error).toMatchObject({ code: 'UND_ERR_INVALID_ARG' })
    }
    expect(server.records).toHaveLength(0)
    // undici sends null as an empty value (we dropped the header, or sent
    // "null"), and reads a record's own keys only.
    const inherited = Object.assign(Object.create({ 'x-inherited': '1' }), { 'x-a': null })
    for (const headers of [inherited, { 'x-a': ['1', null] }]) {
      await (
        await request(server.url, { headers, deadline, dispatcher: agent() } as never)
      ).body.text()
    }
    expect(server.records.map((r) => [r.headers['x-a'], r.headers['x-inherited']])).toEqual([
      ['', undefined],
      ['1, ', undefined],
    ])
    expect(server.records.every((r) => r.headers['x-deadline-remaining-ms'] !== undefined)).toBe(
      true,
    )
  })
})

describe('a Request given to createFetch', () => {
  it('has its body used, as fetch(request) leaves it, and is sent once', async () => {
    const server = await serve({ type: 'respond', body: 'ok' })
    const input = new UndiciRequest(server.url, { method: 'POST', body: 'once' })
    const fetch = client()
    expect(await (await fetch(input)).text()).toBe('ok')
    expect(input.bodyUsed).toBe(true)
    // fetch() refuses a Request whose body is used: it cannot be sent twice.
    expect(await rejection(fetch(input))).toBeInstanceOf(TypeError)
    expect(server.records).toHaveLength(1)
  })

  it('without a body it can be fetched again', async () => {
    const server = await serve({ type: 'respond', body: 'ok' })
    const input = new UndiciRequest(server.url)
    const fetch = client()
    expect(await (await fetch(input)).text()).toBe('ok')
    expect(await (await fetch(input)).text()).toBe('ok')
    expect(server.records).toHaveLength(2)
  })
})

describe("a retry runs in its caller's async context", () => {
  it('interceptor: the retried attempt and its retry event belong to the request that retries, not to the one that opened the socket', async () => {
    // Request A opens the only keep-alive socket; B is answered 503 and
    // retried on it. undici calls back in the socket's async context (A's):
    // a tracer reading the active context put B's second attempt under A.
    const storage = new AsyncLocalStorage<string>()
    const server = await serve((_r, i) =>
      i === 1 ? { type: 'respond', status: 503 } : { type: 'respond', body: 'ok' },
    )
    const base = new Agent({ connections: 1, connect: createConnector() })
    closers.push(base)
    const dispatcher = base.compose(deadlineInterceptor({ retry: { statuses: [503] } }))
    const seen: string[] = []
    const onAttempt = (m: { attempt: number }) =>
      seen.push(`attempt ${m.attempt} in ${storage.getStore()}`)
    const onRetry = (m: { attempt: number }) =>
      seen.push(`retry ${m.attempt} in ${storage.getStore()}`)
    fetchChannels.attempt.subscribe(onAttempt)
    fetchChannels.retry.subscribe(onRetry)
    try {
      const get = async () => {
        const res = await request(server.url, { dispatcher })
        await res.body.text()
        return res.statusCode
      }
      expect(await storage.run('A', get)).toBe(200)
      expect(await storage.run('B', get)).toBe(200)
      expect(seen).toEqual(['attempt 1 in A', 'attempt 1 in B', 'retry 2 in B', 'attempt 2 in B'])
    } finally {
      fetchChannels.attempt.unsubscribe(onAttempt)
      fetchChannels.retry.unsubscribe(onRetry)
    }
  })
})
