import diagnostics from 'node:diagnostics_channel'
import { performance } from 'node:perf_hooks'
import { isDeadlineExceeded } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, expressChannels, type IngressStartMessage } from '../src/index.js'
import { aborted, client, listen, majors, type Running } from './support/servers.js'

function stats(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN
  return {
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    median: at(0.5),
    p90: at(0.9),
    min: at(0),
    max: at(1),
  }
}

const show = (s: ReturnType<typeof stats>) =>
  `mean ${s.mean.toFixed(2)}, median ${s.median.toFixed(2)}, p90 ${s.p90.toFixed(2)}, min ${s.min.toFixed(2)}, max ${s.max.toFixed(2)} ms`

describe.each(majors)('504 timing ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('the 504 arrives within 15 ms after expiresAt − reserveMs, and the signal aborts at that moment', async () => {
    const reserveMs = 10
    // 10 ms from arrival to the 504 (the middleware arms its timer either
    // way): what is measured is the lateness after that moment, which a longer
    // wait does not change. 30 such waits, on both majors, are most of this
    // file's time.
    const budgetMs = 20
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

    // A control timer armed for the same instant as each request's 504: on a
    // shared 2-core box the event loop itself fires late under load, and what
    // the middleware adds is the difference.
    const dueAt: number[] = []
    const controlFiredAt: number[] = []
    const onStart = (message: unknown) => {
      const { deadline: d } = message as IngressStartMessage
      dueAt.push(d.expiresAt)
      setTimeout(() => controlFiredAt.push(performance.now()), d.expiresAt - performance.now())
      // The request's own deadline ends reserveMs before the caller's: that is when the 504 is due.
      expect(d.expiresAt).toBeCloseTo(d.startedAt + budgetMs - reserveMs, 6)
    }
    diagnostics.subscribe(expressChannels.start.name, onStart)
    const lateness: number[] = []
    const overControl: number[] = []
    const abortLag: number[] = []
    const runs = 30
    try {
      for (let i = 0; i < runs; i++) {
        const res = await request(server.url, {
          headers: { 'x-deadline-remaining-ms': String(budgetMs) },
          dispatcher: agent,
        })
        const arrivedAt = performance.now()
        expect(res.statusCode).toBe(504)
        await res.body.dump()
        const due = dueAt[i] ?? Number.NaN
        lateness.push(arrivedAt - due)
        overControl.push(arrivedAt - Math.max(due, controlFiredAt[i] ?? due))
        abortLag.push((abortedAt[i] ?? Number.NaN) - due)
      }
    } finally {
      diagnostics.unsubscribe(expressChannels.start.name, onStart)
    }
    const raw = stats(lateness)
    const added = stats(overControl)
    console.info(
      `[${major.name}] 504 arrival after expiresAt − reserveMs, ${runs} runs: ${show(raw)}\n` +
        `[${major.name}]   beyond a plain timer due at the same instant: ${show(added)}\n` +
        `[${major.name}]   signal abort seen by the handler: max ${Math.max(...abortLag).toFixed(2)} ms`,
    )
    expect(raw.min).toBeGreaterThan(-2) // never early, but for libuv rounding timers to whole ms
    // The 15 ms target, measured against what the event loop can deliver at
    // the moment: idle, both figures agree (≈ 1 ms); under load only the raw one grows.
    expect(added.median).toBeLessThan(15)
    expect(added.mean).toBeLessThan(15)
    // A 504 that waited for anything (the handler, the next tick of a slow
    // timer) would show here; the bound leaves room for a starved machine.
    expect(raw.max).toBeLessThan(500)
    expect(reasons.every(isDeadlineExceeded)).toBe(true)
    expect(Math.max(...abortLag)).toBeLessThan(500)
  })
})
