import { performance } from 'node:perf_hooks'
import { channelNames, type IngressStartMessage, isDeadlineExceeded } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { aborted, client, listen, majors, type Running, record } from './support/servers.js'

describe.each(majors)('504 timing ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('the 504 arrives within 15 ms (median) after expiresAt − reserveMs, and the signal aborted at that moment', async () => {
    const reserveMs = 10
    const budgetMs = 120
    const app = major.app()
    const abortedAt: number[] = []
    const reasons: unknown[] = []
    app.use(deadline({ reserveMs }))
    app.get(
      '/',
      major.route(async (req) => {
        // A handler that ignores time entirely, except for noticing the abort.
        await aborted(req.deadline.signal)
        abortedAt.push(performance.now())
        reasons.push(req.deadline.signal.reason)
      }),
    )
    server = await listen(app)
    const starts = record<IngressStartMessage>(channelNames.ingressStart)
    const lateness: number[] = []
    const abortLag: number[] = []
    const runs = 30
    for (let i = 0; i < runs; i++) {
      const res = await request(server.url, {
        headers: { 'x-deadline-remaining-ms': String(budgetMs) },
        dispatcher: agent,
      })
      const arrivedAt = performance.now()
      expect(res.statusCode).toBe(504)
      await res.body.dump()
      const start = starts.messages[i]
      if (!start) throw new Error('no ingress start event')
      // The request's own deadline ends reserveMs before the caller's: that is when the 504 is due.
      const dueAt = start.deadline.startedAt + budgetMs - reserveMs
      expect(start.deadline.expiresAt).toBeCloseTo(dueAt, 6)
      lateness.push(arrivedAt - dueAt)
      abortLag.push((abortedAt[i] ?? Number.NaN) - dueAt)
    }
    starts.stop()
    const sorted = [...lateness].sort((a, b) => a - b)
    const mean = lateness.reduce((a, b) => a + b, 0) / runs
    const median = sorted[Math.floor(runs / 2)] ?? Number.NaN
    const p90 = sorted[Math.floor(runs * 0.9)] ?? Number.NaN
    const min = sorted[0] ?? Number.NaN
    const max = sorted[runs - 1] ?? Number.NaN
    console.info(
      `[${major.name}] 504 arrival after expiresAt − reserveMs over ${runs} runs: ` +
        `mean ${mean.toFixed(2)}, median ${median.toFixed(2)}, p90 ${p90.toFixed(2)}, ` +
        `min ${min.toFixed(2)}, max ${max.toFixed(2)} ms; ` +
        `signal abort seen by the handler: max ${Math.max(...abortLag).toFixed(2)} ms`,
    )
    expect(min).toBeGreaterThan(-2) // never early, but for libuv rounding timers to whole ms
    // 15 ms is the target on an idle machine; the median keeps a stall of a
    // shared 2-core box (other test files run alongside: 164 ms seen once) from
    // failing the run, and the max still catches a 504 that waits for anything.
    expect(median).toBeLessThan(15)
    expect(max).toBeLessThan(500)
    expect(reasons.every(isDeadlineExceeded)).toBe(true)
    expect(Math.max(...abortLag)).toBeLessThan(500)
  })
})
