import { monitorEventLoopDelay } from 'node:perf_hooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CountingClock } from '../support/CountingClock.js'
import { type Chain, startChain } from '../support/chain.js'
import { drive, type Outcome } from '../support/drive.js'
import type { FaultKind } from '../support/faultCatalogue.js'
import { checkInvariants, TIMING_INVARIANTS, type Verdict } from '../support/invariants.js'
import { type ProcessWatch, watchProcess } from '../support/processWatch.js'
import { growthAfterClosing, type ResourceSnapshot, snapshot } from '../support/resources.js'
import { showStats, stats } from '../support/stats.js'

/**
 * 1,000 requests at once through the whole chain — the edge, the model
 * service, a healthy upstream and a streaming fake provider — each with 10 s
 * to spare. (Split-UTF-8 streams are left to the chaos run: at 1,000 at once
 * the fake's byte-by-byte writes alone saturate the shared cores.) Every one is answered 200 with its whole body,
 * nothing warns (no MaxListenersExceededWarning with 1,000 requests on one
 * dispatcher), and nothing is left behind.
 */
const REQUESTS = 1000
const HEALTHY: readonly (readonly [FaultKind, number])[] = [
  ['ok', 4],
  ['slow-first-byte', 1],
  ['llm-ok', 4],
]

describe('1,000 concurrent requests through the chain', () => {
  const clock = new CountingClock()
  let watch: ProcessWatch
  let chain: Chain
  let baseline: ResourceSnapshot
  let outcomes: Outcome[]
  let verdict: Verdict
  let seconds: number
  const loop = monitorEventLoopDelay({ resolution: 5 })

  beforeAll(async () => {
    watch = watchProcess()
    chain = await startChain({ clock, watch })
    baseline = snapshot()
    loop.enable()
    const started = performance.now()
    outcomes = await drive(chain, {
      requests: REQUESTS,
      concurrency: REQUESTS,
      seed: 1000,
      mix: HEALTHY,
      budgetMs: 10_000,
      disconnectShare: 0,
    })
    seconds = (performance.now() - started) / 1000
    loop.disable()
    verdict = checkInvariants(outcomes, chain)
    const latency = outcomes.map((o) => (o.arrivedAt ?? Number.NaN) - o.sentAt)
    console.info(
      [
        `load: ${REQUESTS} concurrent requests in ${seconds.toFixed(2)} s (${Math.round(REQUESTS / seconds)}/s, the run's own waits included)`,
        `  answers: ${[...verdict.statuses].map(([k, n]) => `${k} ${n}`).join(', ')}`,
        `  latency: ${showStats(stats(latency))}`,
        `  event-loop delay: p50 ${(loop.percentile(50) / 1e6).toFixed(1)}, p99 ${(loop.percentile(99) / 1e6).toFixed(1)}, max ${(loop.max / 1e6).toFixed(1)} ms`,
        `  checks ${[...verdict.checks.values()].reduce((a, b) => a + b, 0)}, violations ${verdict.violations.length}`,
      ].join('\n'),
    )
  }, 120_000)

  afterAll(async () => {
    watch.stop()
    await chain.close()
  })

  it('answers every request 200 with its whole body, no U+FFFD', () => {
    expect(verdict.statuses.get('200')).toBe(REQUESTS)
    expect(verdict.violations.filter((v) => !TIMING_INVARIANTS.has(v.invariant))).toEqual([])
  })

  it('warns of nothing: no MaxListenersExceededWarning, no unhandled rejection', () => {
    expect(watch.problems()).toEqual([])
  })

  it('leaves no deadline timer, socket, timer or listener behind', async () => {
    expect(clock.pending).toBe(0)
    expect(await growthAfterClosing(baseline, () => chain.closePools())).toEqual({})
  })
})
