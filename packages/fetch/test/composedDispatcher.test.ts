import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { closedPort } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor } from '../src/index.js'
import { recordEgress } from './helpers.js'
import { frozenClock } from './support/frozenClock.js'

let closers: { close(): Promise<unknown> }[] = []
let server: Server | undefined
afterEach(async () => {
  for (const closer of closers) await closer.close()
  closers = []
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/** Answers every request 503 and counts them. */
async function always503(): Promise<{ url: string; seen: () => number }> {
  let seen = 0
  server = createServer((_req, res) => {
    seen += 1
    res.writeHead(503).end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`, seen: () => seen }
}

function agent(): Agent {
  const made = new Agent({ headersTimeout: 0, bodyTimeout: 0 })
  closers.push(made)
  return made
}

const retry = { statuses: [503] }

// A refused connect measured as fast: see support/frozenClock.ts.
const frozen = frozenClock

/**
 * A dispatcher already composed with `deadlineInterceptor` and given to
 * `createFetch` (or the interceptor composed twice) is one deadline layer,
 * not two: each layer took every request as its own — two attempts with
 * their own timers for each one sent, and, beneath createFetch's, a
 * redirect hop that was none.
 */
describe('a dispatcher already composed with deadlineInterceptor', () => {
  it('given to createFetch: a retried 503 is two requests and two attempts, none of them a redirect', async () => {
    const { url, seen } = await always503()
    const fetch = createFetch({
      dispatcher: agent().compose(deadlineInterceptor({ retry })),
      retry,
    })
    const events = recordEgress()
    try {
      const res = await fetch(url)
      expect(res.status).toBe(503)
      expect(seen()).toBe(2)
      expect(events.attempts.map((m) => [m.attempt, m.redirect])).toEqual([
        [1, undefined],
        [2, undefined],
      ])
      expect(events.ends.map((m) => [m.attempt, m.statusCode])).toEqual([
        [1, 503],
        [2, 503],
      ])
      expect(events.retries).toHaveLength(1)
      expect(events.skipped.map((m) => m.why)).toEqual(['already-retried'])
    } finally {
      events.stop()
    }
  })

  it('given to createFetch: a POST whose connect fails fast is retried once, as through a plain Agent (it was read as a failed redirect)', async () => {
    const port = await closedPort()
    // Both layers measure on a clock that stands still (real timers): the
    // refused connect is fast, as on an idle box. In real time a loaded box
    // can report it 50 ms or more after the connect began: slow, never
    // retried (`slow-connect-failure`), whichever layer judged it.
    const fetch = createFetch({
      dispatcher: agent().compose(deadlineInterceptor({ clock: frozen })),
      clock: frozen,
    })
    const events = recordEgress()
    try {
      const error = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: 'x' }).catch(
        (e: unknown) => e,
      )
      expect((error as { code?: unknown }).code).toBe('CONNECT_FAILED')
      expect(events.retries.map((m) => m.reason)).toEqual(['CONNECT_FAILED'])
      expect(events.skipped.map((m) => m.why)).toEqual(['already-retried'])
    } finally {
      events.stop()
    }
  })

  it('composed twice, under undici.request: a retried 503 is two requests, one retry loop', async () => {
    const { url, seen } = await always503()
    const dispatcher = agent().compose(
      deadlineInterceptor({ retry }),
      deadlineInterceptor({ retry }),
    )
    const events = recordEgress()
    try {
      const res = await request(url, { dispatcher })
      await res.body.dump()
      expect(res.statusCode).toBe(503)
      expect(seen()).toBe(2)
      expect(events.attempts).toHaveLength(2)
      expect(events.retries).toHaveLength(1)
    } finally {
      events.stop()
    }
  })
})

describe("a call's own init.dispatcher (undici fetch's per-call option)", () => {
  it('is the one the request goes through, under the deadline layer: its 503 retried, the header sent', async () => {
    const { url, seen } = await always503()
    const through: string[] = []
    // A caller's proxy or mock Agent, say: here one that notes what it sends.
    const own = agent().compose((dispatch) => (opts, handler) => {
      // Whatever the shape (fetch dispatches a record, kept a record).
      through.push(String(JSON.stringify(opts.headers).includes('"x-deadline-remaining-ms"')))
      return dispatch(opts, handler)
    })
    const fetch = createFetch({ retry })
    closers.push(fetch)
    const res = await fetch(url, { dispatcher: own, deadline: Deadline.after(10_000) })
    expect(res.status).toBe(503)
    // Before: createFetch's own Agent sent it, the caller's was never called
    // (a per-call ProxyAgent bypassed; a MockAgent's answer never given).
    expect(through).toEqual(['true', 'true'])
    expect(seen()).toBe(2)
  })
})
