import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import type { FaultServer } from '@hourglass/testkit'
import { Headers, request } from 'undici'
import { describe, expect, it } from 'vitest'
import { type DeadlineDispatchOptions, probe } from '../src/index.js'
import { headerClients } from './support/headerClients.js'

// A caller's own `x-deadline-remaining-ms` was dropped on every call, even
// when no deadline applied and nothing of ours replaced it: the endpoint got
// the caller's other headers but not that one (`probe({ headers })` and the
// CLI's `-H` too). With no deadline at all it is sent as given; under a
// deadline that writes ours it is replaced — one value, what is left at
// dispatch. Under a deadline that writes none (`never()`, dark mode past its
// time with nothing enforcing above it) it is dropped and nothing is sent,
// as the gRPC client does: it was sent as given, so a call exempted with
// `never()` was cut by the next hop to a stale inbound budget, and a
// dark-mode deadline past its time made the next hop answer 504 on a stale
// "0". Deadlines here run on a ManualClock, so the value ours says is exact.

const { serve, fetchClient, interceptorAgent } = headerClients()

/** What the server got as the deadline header on request `index` (Node joins repeats with ", "). */
function sentHeader(server: FaultServer, index = 0): unknown {
  return server.records[index]?.headers['x-deadline-remaining-ms']
}

describe('createFetch', () => {
  it('with no deadline, sends the caller’s x-deadline-remaining-ms as given (record, pairs, Headers)', async () => {
    const server = await serve()
    const fetch = fetchClient()
    await (
      await fetch(server.url, { headers: { 'x-deadline-remaining-ms': '1500', 'x-other': '1' } })
    ).text()
    await (await fetch(server.url, { headers: [['X-Deadline-Remaining-Ms', '1400']] })).text()
    await (
      await fetch(server.url, { headers: new Headers({ 'x-deadline-remaining-ms': '1300' }) })
    ).text()
    expect(server.records[0]?.headers['x-other']).toBe('1')
    expect([sentHeader(server, 0), sentHeader(server, 1), sentHeader(server, 2)]).toEqual([
      '1500',
      '1400',
      '1300',
    ])
  })

  it('under a deadline that writes none (never(), given or current), sends none: the caller’s stale one is dropped', async () => {
    const server = await serve()
    const fetch = fetchClient()
    await (
      await fetch(server.url, {
        deadline: Deadline.never(),
        headers: { 'x-deadline-remaining-ms': '1500', 'x-other': '1' },
      })
    ).text()
    await runWithDeadline(Deadline.never(), async () => {
      await (await fetch(server.url, { headers: [['X-Deadline-Remaining-Ms', '1400']] })).text()
      await (
        await fetch(server.url, { headers: new Headers({ 'x-deadline-remaining-ms': '1300' }) })
      ).text()
    })
    expect(server.records[0]?.headers['x-other']).toBe('1')
    expect([sentHeader(server, 0), sentHeader(server, 1), sentHeader(server, 2)]).toEqual([
      undefined,
      undefined,
      undefined,
    ])
  })

  it('under dark mode past its time, nothing enforcing above it: sends none (no stale "0" for the next hop to answer 504 on)', async () => {
    const server = await serve()
    const fetch = fetchClient()
    const clock = new ManualClock()
    using deadline = Deadline.after(100, { clock, observe: true })
    clock.advance(200)
    await (
      await fetch(server.url, { deadline, headers: { 'x-deadline-remaining-ms': '1500' } })
    ).text()
    expect(server.records).toHaveLength(1)
    expect(sentHeader(server)).toBeUndefined()
  })

  it('with a deadline, ours replaces the caller’s — larger or smaller — and only one value is sent', async () => {
    const server = await serve()
    const fetch = fetchClient()
    const clock = new ManualClock()
    for (const theirs of ['99999', '5']) {
      using deadline = Deadline.after(2000, { clock })
      await (
        await fetch(server.url, { deadline, headers: { 'x-deadline-remaining-ms': theirs } })
      ).text()
    }
    expect([sentHeader(server, 0), sentHeader(server, 1)]).toEqual(['2000', '2000'])
  })
})

describe('deadlineInterceptor with undici.request (the same rule)', () => {
  it('with no deadline, sends the caller’s as given', async () => {
    const server = await serve()
    const dispatcher = interceptorAgent()
    const { body } = await request(server.url, {
      dispatcher,
      headers: { 'x-deadline-remaining-ms': '1500', 'x-other': '1' },
    })
    await body.text()
    expect(server.records[0]?.headers['x-other']).toBe('1')
    expect(sentHeader(server)).toBe('1500')
  })

  it('under never() (explicit or current), or dark mode past its time, sends none: the caller’s is dropped', async () => {
    const server = await serve()
    const dispatcher = interceptorAgent()
    const explicit = await request(server.url, {
      dispatcher,
      deadline: Deadline.never(),
      headers: ['x-deadline-remaining-ms', '5', 'x-other', '1'],
    } as DeadlineDispatchOptions as Parameters<typeof request>[1])
    await explicit.body.text()
    const current = await runWithDeadline(Deadline.never(), () =>
      request(server.url, { dispatcher, headers: { 'X-Deadline-Remaining-Ms': '99999' } }),
    )
    await current.body.text()
    const clock = new ManualClock()
    using dark = Deadline.after(100, { clock, observe: true })
    clock.advance(200)
    const passed = await request(server.url, {
      dispatcher,
      deadline: dark,
      headers: new Headers({ 'x-deadline-remaining-ms': '1500' }),
    } as DeadlineDispatchOptions as Parameters<typeof request>[1])
    await passed.body.text()
    expect(server.records[0]?.headers['x-other']).toBe('1')
    expect([sentHeader(server, 0), sentHeader(server, 1), sentHeader(server, 2)]).toEqual([
      undefined,
      undefined,
      undefined,
    ])
  })

  it('with a deadline (explicit or current), ours replaces the caller’s', async () => {
    const server = await serve()
    const dispatcher = interceptorAgent()
    const clock = new ManualClock()
    using deadline = Deadline.after(2000, { clock })
    const explicit = await request(server.url, {
      dispatcher,
      deadline,
      headers: ['x-deadline-remaining-ms', '5'],
    } as DeadlineDispatchOptions as Parameters<typeof request>[1])
    await explicit.body.text()
    const current = await runWithDeadline(deadline, () =>
      request(server.url, { dispatcher, headers: { 'X-Deadline-Remaining-Ms': '99999' } }),
    )
    await current.body.text()
    expect([sentHeader(server, 0), sentHeader(server, 1)]).toEqual(['2000', '2000'])
  })
})

it('probe({ headers }) sends the caller’s x-deadline-remaining-ms on every call, warm-up included', async () => {
  const server = await serve()
  await probe(server.url, {
    warmup: 1,
    samples: 1,
    headers: [
      ['x-deadline-remaining-ms', '300'],
      ['x-other', '1'],
    ],
  })
  expect(
    server.records.map((r) => [r.headers['x-deadline-remaining-ms'], r.headers['x-other']]),
  ).toEqual([
    ['300', '1'],
    ['300', '1'],
  ])
})
