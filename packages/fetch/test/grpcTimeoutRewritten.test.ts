import { Deadline, ManualClock, readDeadline, runWithDeadline } from '@hourglass/core'
import type { FaultServer } from '@hourglass/testkit'
import { Headers, Request, request } from 'undici'
import { describe, expect, it } from 'vitest'
import type { DeadlineDispatchOptions } from '../src/index.js'
import { headerClients } from './support/headerClients.js'

// A gRPC-web client (or a handler forwarding its inbound headers) run
// through createFetch or the interceptor under a deadline lost its
// `grpc-timeout` outright: the caller's deadline sources are dropped under a
// deadline, ours written as `x-deadline-remaining-ms` alone — a header a
// gRPC server (grpc-js, Envoy's grpc-web filter) does not read, so the call
// reached it with no deadline at all. Where the caller's request carries a
// `grpc-timeout`, ours is now written there too, in gRPC's own format
// (at most 8 digits and a unit), so the next hop is bounded by our deadline:
// not the edge's stale value, and not nothing. Deadlines run on a
// ManualClock, so the values are exact.

const { serve, fetchClient, interceptorAgent } = headerClients()

/** The `grpc-timeout` each request reached the server with (Node joins repeats with ", "). */
function grpcTimeouts(server: FaultServer): unknown[] {
  return server.records.map((r) => r.headers['grpc-timeout'])
}

/** The budget a gRPC server trusting `grpc-timeout` alone takes from what request `index` carried. */
function grpcBudget(server: FaultServer, index: number): number | undefined {
  const headers = server.records[index]?.headers ?? {}
  return readDeadline(headers as Record<string, string>, {
    sources: ['grpc-timeout'],
    maxMs: 2 ** 31 - 1,
  }).ms
}

const GRPC_WEB = { 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1' }

describe('createFetch', () => {
  it('under a 2 s deadline, a caller’s grpc-timeout goes out as ours, 2000m (record, pairs, Headers, a Request’s, any letter case)', async () => {
    const server = await serve()
    const fetch = fetchClient()
    const clock = new ManualClock()
    using deadline = Deadline.after(2000, { clock })
    await (
      await fetch(server.url, { deadline, headers: { ...GRPC_WEB, 'grpc-timeout': '400m' } })
    ).text()
    await (await fetch(server.url, { deadline, headers: [['Grpc-Timeout', '10S']] })).text()
    await (
      await fetch(server.url, { deadline, headers: new Headers({ 'grpc-timeout': '1H' }) })
    ).text()
    const req = new Request(server.url, { headers: { 'GRPC-TIMEOUT': '5M' } })
    await (await fetch(req, { deadline })).text()
    expect(grpcTimeouts(server)).toEqual(['2000m', '2000m', '2000m', '2000m'])
    expect(server.records.map((r) => r.headers['x-deadline-remaining-ms'])).toEqual([
      '2000',
      '2000',
      '2000',
      '2000',
    ])
    expect(grpcBudget(server, 0)).toBe(2000)
  })

  it('under the current deadline, what is left when the request is dispatched', async () => {
    const server = await serve()
    const fetch = fetchClient()
    const clock = new ManualClock()
    using deadline = Deadline.after(2000, { clock })
    clock.advance(750)
    await runWithDeadline(deadline, async () => {
      await (await fetch(server.url, { headers: { 'grpc-timeout': '400m' } })).text()
    })
    expect(grpcTimeouts(server)).toEqual(['1250m'])
  })

  it('a deadline 10^8 ms or more away goes in whole seconds, rounded down (8 digits at most)', async () => {
    const server = await serve()
    const fetch = fetchClient()
    const clock = new ManualClock()
    using long = Deadline.after(123_456_789, { clock })
    using longest = Deadline.after(1e12, { clock })
    await (await fetch(server.url, { deadline: long, headers: { 'grpc-timeout': '1m' } })).text()
    await (await fetch(server.url, { deadline: longest, headers: { 'grpc-timeout': '1m' } })).text()
    expect(grpcTimeouts(server)).toEqual(['123456S', '2147483S'])
    expect(grpcBudget(server, 0)).toBe(123_456_000)
  })

  it('adds none where the caller sent none, and under never() or with no deadline keeps the rule: dropped, or as given', async () => {
    const server = await serve()
    const fetch = fetchClient()
    const clock = new ManualClock()
    using deadline = Deadline.after(2000, { clock })
    await (await fetch(server.url, { deadline, headers: GRPC_WEB })).text()
    await (
      await fetch(server.url, { deadline: Deadline.never(), headers: { 'grpc-timeout': '400m' } })
    ).text()
    await (await fetch(server.url, { headers: { 'grpc-timeout': '400m' } })).text()
    expect(grpcTimeouts(server)).toEqual([undefined, undefined, '400m'])
  })
})

describe('deadlineInterceptor with undici.request', () => {
  it('under a 2 s deadline (given or current), a caller’s grpc-timeout goes out as ours (record, flat array, Map); an undefined one stays unsent', async () => {
    const server = await serve()
    const dispatcher = interceptorAgent()
    const clock = new ManualClock()
    using deadline = Deadline.after(2000, { clock })
    const ask = async (options: Record<string, unknown>) => {
      const { body } = await request(server.url, {
        dispatcher,
        ...options,
      } as DeadlineDispatchOptions as Parameters<typeof request>[1])
      await body.text()
    }
    await ask({ deadline, headers: { 'grpc-timeout': '400m', 'x-other': '1' } })
    await ask({ deadline, headers: ['Grpc-Timeout', '10S', 'x-other', '1'] })
    await runWithDeadline(deadline, () => ask({ headers: new Map([['grpc-timeout', '1H']]) }))
    // A record's undefined is no header (undici skips it): none to rewrite.
    await ask({ deadline, headers: { 'grpc-timeout': undefined } })
    expect(grpcTimeouts(server)).toEqual(['2000m', '2000m', '2000m', undefined])
    expect(server.records[1]?.headers['x-other']).toBe('1')
  })
})
