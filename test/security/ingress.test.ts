import diagnostics from 'node:diagnostics_channel'
import { deadline, expressChannels, type IngressStartMessage } from '@hourglass/express'
import { createFetch } from '@hourglass/fetch'
import { faultServer } from '@hourglass/testkit'
import express from 'express'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { CountingClock } from '../support/CountingClock.js'
import { type Listening, listen } from '../support/listen.js'
import { showStats, stats } from '../support/stats.js'

/**
 * What an untrusted caller can do with a deadline header: ask for more time
 * than the server grants, send a source the server does not trust, or flood
 * it with budgets that are already spent.
 */

const opened: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close()
})

async function serve(app: express.Express): Promise<Listening> {
  const running = await listen(app)
  opened.push(running)
  return running
}

function starts() {
  const seen: IngressStartMessage[] = []
  const fn = (m: unknown) => seen.push(m as IngressStartMessage)
  diagnostics.subscribe(expressChannels.start.name, fn)
  opened.push({ close: async () => void diagnostics.unsubscribe(expressChannels.start.name, fn) })
  return seen
}

describe('untrusted deadlines', () => {
  it('an inbound deadline above maxMs is clamped to maxMs, and the next hop is sent no more than that', async () => {
    const upstream = await faultServer({ type: 'respond', body: 'ok' })
    opened.push(upstream)
    const hfetch = createFetch()
    opened.push(hfetch)
    const app = express()
    app.use(deadline({ maxMs: 2000 }))
    app.get('/', async (req, res) => {
      const answer = await hfetch(upstream.url, { deadline: req.deadline })
      res.json({ budgetMs: req.deadline.budgetMs, upstream: await answer.text() })
    })
    const server = await serve(app)
    const seen = starts()
    const asks: Record<string, string>[] = [
      { 'x-deadline-remaining-ms': '2147483647' },
      { 'grpc-timeout': '596H' }, // 2,145,600,000 ms: the largest hour count under 2^31-1 ms
      { 'x-envoy-expected-rq-timeout-ms': '86400000' },
      { 'x-deadline-remaining-ms': '999999', 'grpc-timeout': '5000S' },
    ]
    for (const headers of asks) {
      const res = await request(server.url, { headers })
      expect(res.statusCode).toBe(200)
      const body = (await res.body.json()) as { budgetMs: number }
      expect(body.budgetMs).toBeLessThanOrEqual(2000)
    }
    expect(seen.map((m) => [m.budgetMs, m.clamped])).toEqual(asks.map(() => [2000, true]))
    // What the next hop was told: never more than the clamp (minus the time already spent).
    for (const record of upstream.records) {
      expect(Number(record.headers['x-deadline-remaining-ms'])).toBeLessThanOrEqual(2000)
      expect(Number(record.headers['x-deadline-remaining-ms'])).toBeGreaterThan(1000)
    }
  })

  it('a source the server does not trust is ignored, however small or large its value', async () => {
    const app = express()
    // The request's budget is what the caller's header said (or the default);
    // the handler's deadline is that less reserveMs, fixed at 10 here. The
    // default reserve is adaptive (10–100 ms: twice this process's timer
    // lateness plus 2, at least): once the first second since this file's
    // first request has been measured (the test above can take that long on
    // a slow run) with an event-loop delay p99 over 4 ms (a GC, cold code),
    // it is past 10, and 700 reads back less. The same app, read again 1.1 s
    // after one 6 ms stall on a loaded box: 616.
    app.use(deadline({ defaultMs: 700, trust: ['x-deadline-remaining-ms'], reserveMs: 10 }))
    app.get('/', (req, res) => {
      res.json({ budgetMs: Math.round(req.deadline.budgetMs + 10) })
    })
    const edge = express()
    // Internet-facing: trusts nothing.
    edge.use(deadline({ defaultMs: 900, trust: [], reserveMs: 10 }))
    edge.get('/', (req, res) => {
      res.json({ budgetMs: Math.round(req.deadline.budgetMs + 10) })
    })
    const server = await serve(app)
    const edgeServer = await serve(edge)
    const seen = starts()
    const read = async (url: string, headers: Record<string, string>) => {
      const res = await request(url, { headers })
      return ((await res.body.json()) as { budgetMs: number }).budgetMs
    }
    // grpc-timeout and envoy are not trusted here: neither shortens nor lengthens.
    expect(await read(server.url, { 'grpc-timeout': '1m' })).toBe(700)
    expect(await read(server.url, { 'x-envoy-expected-rq-timeout-ms': '5' })).toBe(700)
    expect(await read(server.url, { 'grpc-timeout': '1m', 'x-deadline-remaining-ms': '300' })).toBe(
      300,
    )
    // Trusting nothing: every header ignored, the edge's own budget applies.
    for (const headers of [
      { 'x-deadline-remaining-ms': '1' },
      { 'x-deadline-remaining-ms': '0' },
      { 'grpc-timeout': '99999999H' },
    ]) {
      expect(await read(edgeServer.url, headers)).toBe(900)
    }
    expect(
      seen.every((m) => m.source === 'default' || m.source === 'x-deadline-remaining-ms'),
    ).toBe(true)
  })

  it('a flood of 0 ms budgets is answered 504 without running a handler, a body parser or a timer', async () => {
    const clock = new CountingClock()
    let parsed = 0
    let handled = 0
    const app = express()
    app.use(deadline({ clock }))
    app.use((_req, _res, next) => {
      parsed++ // stands for express.json() and everything else mounted after deadline()
      next()
    })
    app.post('/', (_req, res) => {
      handled++
      res.json({ ok: true })
    })
    const server = await serve(app)
    const agent = new Agent({ connections: 32 })
    opened.push(agent)
    // 2,000 on 32 connections: the counts below are exact at any size (one
    // handler, parser or timer run fails them), and a median of 2,000 answers
    // is as steady as one of 5,000, which cost ~2 s more of the serial
    // timing phase.
    const flood = 2000
    const latencies: number[] = []
    const statuses = new Map<number, number>()
    let sent = 0
    const started = performance.now()
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (sent < flood) {
          sent++
          const t = performance.now()
          const res = await request(server.url, {
            method: 'POST',
            dispatcher: agent,
            headers: { 'x-deadline-remaining-ms': '0', 'content-type': 'application/json' },
            body: JSON.stringify({ big: 'x'.repeat(2000) }),
          })
          await res.body.dump()
          latencies.push(performance.now() - t)
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
          expect(res.headers['x-deadline-expired']).toBe('1')
        }
      }),
    )
    const seconds = (performance.now() - started) / 1000
    console.info(
      `0 ms flood: ${flood} requests in ${seconds.toFixed(2)} s (${Math.round(flood / seconds)}/s), latency ${showStats(stats(latencies))}; handlers run ${handled}, middleware after deadline() run ${parsed}, timers armed ${clock.armed}`,
    )
    expect([...statuses]).toEqual([[504, flood]])
    expect(handled).toBe(0)
    expect(parsed).toBe(0)
    expect(clock.armed).toBe(0) // nothing scheduled for a request that is already over
    expect(stats(latencies).median).toBeLessThan(50)
  })
})
