import { adaptiveReserveMs, MAX_RESERVE_MS, MIN_RESERVE_MS } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

/** Keep the event loop busy for `ms` (a CPU-bound handler elsewhere in the process). */
function block(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

/**
 * The adaptive reserve learns from the 504s this process actually wrote: how
 * long after its own deadline each was flushed. A loop that delays the flush
 * makes the next requests keep more time back. Lower bounds only: a busier
 * machine makes the figures larger, never smaller.
 */
// One Express major: the learned figure is process-wide, and this file is one process.
const major = majors[0] as (typeof majors)[number]

describe(`the adaptive reserve learns from late 504s (${major.name})`, () => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('504s flushed 40 ms after their deadline raise the default reserve above 40 ms; a fixed reserveMs still wins', async () => {
    const app = major.app()
    // The hook runs right after the 504 is written, before it can be flushed:
    // blocking there delays the flush as a busy loop would.
    app.use(deadline({ onExpire: () => block(40) }))
    app.get('/budget', (req, res) => {
      res.json({ budgetMs: req.deadline.budgetMs })
    })
    app.get('/', () => {
      // Never answers: the middleware's own timer writes the 504.
    })
    server = await listen(app)
    expect(adaptiveReserveMs()).toBeLessThan(40)
    // Five short requests, well inside the event-loop monitor's first 1 s
    // window: what the reserve learns here comes from the 504s themselves.
    for (let i = 0; i < 5; i++) {
      const res = await request(server.url, {
        headers: { 'x-deadline-remaining-ms': '60' },
        dispatcher: agent,
      })
      expect(res.statusCode).toBe(504)
      await res.body.text()
    }
    const reserve = adaptiveReserveMs()
    expect(reserve).toBeGreaterThanOrEqual(42)
    expect(reserve).toBeLessThanOrEqual(MAX_RESERVE_MS)
    expect(reserve).toBeGreaterThan(MIN_RESERVE_MS)
    // deadline() without reserveMs uses it: the handler's budget is the caller's less the learned reserve.
    const asked = await request(`${server.url}/budget`, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    const { budgetMs } = (await asked.body.json()) as { budgetMs: number }
    expect(1000 - budgetMs).toBeGreaterThanOrEqual(40)
    expect(1000 - budgetMs).toBeLessThanOrEqual(MAX_RESERVE_MS)

    // A fixed reserveMs is not adapted: the handler gets the budget less exactly that.
    const fixed = major.app()
    const remaining: number[] = []
    fixed.use(deadline({ reserveMs: 10 }))
    fixed.get('/', (req, res) => {
      remaining.push(req.deadline.remaining())
      res.json({ ok: true })
    })
    await server.close()
    server = await listen(fixed)
    const res = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': '200' },
      dispatcher: agent,
    })
    await res.body.text()
    expect(remaining[0]).toBeGreaterThan(150)
    expect(remaining[0]).toBeLessThanOrEqual(190)
  })
})
