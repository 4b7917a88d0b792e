import diagnostics from 'node:diagnostics_channel'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, KNOWN_DEADLINE_SOURCES, ManualClock, runWithDeadline } from '@hourglass/core'
import { deadline, expressChannels, type IngressStartMessage } from '@hourglass/express'
import express from 'express'
import { Agent, Headers, request } from 'undici'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  createConnector,
  createFetch,
  type DeadlineDispatchOptions,
  deadlineInterceptor,
} from '../src/index.js'

// A proxy-style handler forwards its inbound headers on egress
// (`fetch(url, { headers: req.headers, deadline })`, or the interceptor with
// `request(url, { headers: req.headers })`), and with them its caller's
// deadline headers. Our own `x-deadline-remaining-ms` was replaced (or
// dropped), but Envoy's `x-envoy-expected-rq-timeout-ms` (trusted by
// default by a Hourglass server, which takes the smallest trusted value),
// a `grpc-timeout` and an SDK's `x-stainless-timeout` went out as given: a
// call exempted with `Deadline.never()`, or given 20 s, was cut by the next
// hop to the edge's 300 ms. Under a deadline (given or current) none of
// them goes now, ours alone (if any) does; with no deadline at all the
// caller's headers go as given. The edge's `grpc-timeout` is the exception
// where ours is written: it goes as ours, in gRPC's format, not dropped. The next hop here is a real Express app
// with `deadline()` trusting every known source; our deadlines run on a
// ManualClock, so the value ours says is exact.

/** What an edge (Envoy, an SDK, a Hourglass hop) put on the request the handler forwards. */
const EDGE = {
  'x-envoy-expected-rq-timeout-ms': '300',
  'x-stainless-timeout': '1',
  'grpc-timeout': '400m',
  'x-deadline-remaining-ms': '350',
  'x-request-id': 'r-1',
}

interface Seen {
  /** Where the next hop's `deadline()` took its budget from, and that budget. */
  source: string
  budgetMs: number
  /** The deadline headers it got (Node joins repeats with ", "), and one that is not. */
  headers: Record<string, string | undefined>
}

let closers: { close(): Promise<void> }[] = []
const starts = new Map<unknown, IngressStartMessage>()
const onStart = (message: unknown) => {
  const start = message as IngressStartMessage
  starts.set(start.req, start)
}
beforeEach(() => diagnostics.subscribe(expressChannels.start.name, onStart))
afterEach(async () => {
  diagnostics.unsubscribe(expressChannels.start.name, onStart)
  starts.clear()
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

/** The next hop: Express + `deadline()`, trusting all four sources; answers what it saw. */
async function nextHop(): Promise<string> {
  const app = express()
  app.use(deadline({ trust: [...KNOWN_DEADLINE_SOURCES], defaultMs: 5000 }))
  app.get('/work', (req, res) => {
    const start = starts.get(req)
    const headers: Record<string, string | undefined> = {}
    for (const name of [...KNOWN_DEADLINE_SOURCES, 'x-request-id']) {
      headers[name] = req.headers[name] as string | undefined
    }
    const seen: Seen = { source: String(start?.source), budgetMs: start?.budgetMs ?? -1, headers }
    res.json(seen)
  })
  const server: Server = app.listen(0, '127.0.0.1')
  closers.push({
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  })
  await new Promise((resolve) => server.once('listening', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/work`
}

function fetchClient() {
  const fetch = createFetch()
  closers.push(fetch)
  return fetch
}

function interceptorAgent() {
  const base = new Agent({ connect: createConnector() })
  closers.push(base)
  return base.compose(deadlineInterceptor())
}

/**
 * Only `x-request-id` of the edge's, and `ours` as the deadline header (none
 * when undefined) — and as the edge's `grpc-timeout`, rewritten in gRPC's
 * format (`<ms>m`), where ours is written (test/grpcTimeoutRewritten.test.ts).
 */
function onlyOurs(ours: string | undefined): Record<string, string | undefined> {
  return {
    'x-deadline-remaining-ms': ours,
    'grpc-timeout': ours === undefined ? undefined : `${ours}m`,
    'x-envoy-expected-rq-timeout-ms': undefined,
    'x-stainless-timeout': undefined,
    'x-request-id': 'r-1',
  }
}

describe('createFetch forwarding the inbound headers', () => {
  it('under never() (given or current) sends none of the edge’s deadline headers: the next hop gives its default, not the edge’s 300 ms', async () => {
    const url = await nextHop()
    const fetch = fetchClient()
    const given = (await (
      await fetch(url, { headers: EDGE, deadline: Deadline.never() })
    ).json()) as Seen
    const current = (await runWithDeadline(Deadline.never(), async () =>
      (await fetch(url, { headers: new Headers(EDGE) })).json(),
    )) as Seen
    for (const seen of [given, current]) {
      expect(seen).toEqual({ source: 'default', budgetMs: 5000, headers: onlyOurs(undefined) })
    }
  })

  it('under a 20 s deadline sends ours alone: the next hop gets 20 s, not the edge’s 300 ms (record, pairs, Headers, any letter case)', async () => {
    const url = await nextHop()
    const fetch = fetchClient()
    const clock = new ManualClock()
    using twenty = Deadline.after(20_000, { clock })
    const pairs = Object.entries(EDGE).map(([name, value]): [string, string] => [
      name.toUpperCase(),
      value,
    ])
    const seen: Seen[] = []
    for (const headers of [EDGE, pairs, new Headers(EDGE)]) {
      seen.push((await (await fetch(url, { headers, deadline: twenty })).json()) as Seen)
    }
    for (const one of seen) {
      expect(one).toEqual({
        source: 'x-deadline-remaining-ms',
        budgetMs: 20_000,
        headers: onlyOurs('20000'),
      })
    }
  })

  it('in dark mode past its time, nothing enforcing above it, sends none of them either', async () => {
    const url = await nextHop()
    const fetch = fetchClient()
    const clock = new ManualClock()
    using dark = Deadline.after(100, { clock, observe: true })
    clock.advance(200)
    const seen = (await (await fetch(url, { headers: EDGE, deadline: dark })).json()) as Seen
    expect(seen).toEqual({ source: 'default', budgetMs: 5000, headers: onlyOurs(undefined) })
  })

  it('with no deadline at all, sends the caller’s headers as given (the next hop takes the smallest)', async () => {
    const url = await nextHop()
    const fetch = fetchClient()
    const seen = (await (await fetch(url, { headers: EDGE })).json()) as Seen
    expect(seen).toEqual({
      source: 'x-envoy-expected-rq-timeout-ms',
      budgetMs: 300,
      headers: EDGE,
    })
  })
})

describe('deadlineInterceptor with undici.request forwarding the inbound headers (the same rule)', () => {
  async function ask(
    url: string,
    options: {
      headers: NonNullable<Parameters<typeof request>[1]>['headers']
      deadline?: Deadline
    },
  ): Promise<Seen> {
    const { body } = await request(url, {
      dispatcher: interceptorAgent(),
      ...options,
    } as DeadlineDispatchOptions as Parameters<typeof request>[1])
    return (await body.json()) as Seen
  }

  it('under never() (given or current) sends none of them (record, flat array)', async () => {
    const url = await nextHop()
    const flat = Object.entries(EDGE).flat()
    const seen = [
      await ask(url, { headers: EDGE, deadline: Deadline.never() }),
      await runWithDeadline(Deadline.never(), () => ask(url, { headers: flat })),
    ]
    for (const one of seen) {
      expect(one).toEqual({ source: 'default', budgetMs: 5000, headers: onlyOurs(undefined) })
    }
  })

  it('under a 20 s deadline (given or current) sends ours alone', async () => {
    const url = await nextHop()
    const clock = new ManualClock()
    using twenty = Deadline.after(20_000, { clock })
    const seen = [
      await ask(url, { headers: EDGE, deadline: twenty }),
      await runWithDeadline(twenty, () => ask(url, { headers: new Map(Object.entries(EDGE)) })),
    ]
    for (const one of seen) {
      expect(one).toEqual({
        source: 'x-deadline-remaining-ms',
        budgetMs: 20_000,
        headers: onlyOurs('20000'),
      })
    }
  })

  it('with no deadline at all, sends them as given', async () => {
    const url = await nextHop()
    const seen = await ask(url, { headers: EDGE })
    expect(seen).toEqual({
      source: 'x-envoy-expected-rq-timeout-ms',
      budgetMs: 300,
      headers: EDGE,
    })
  })
})
