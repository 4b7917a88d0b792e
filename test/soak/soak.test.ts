import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CountingClock } from '../support/CountingClock.js'
import { type Chain, startChain } from '../support/chain.js'
import { drive } from '../support/drive.js'
import { env } from '../support/env.js'
import { checkInvariants, TIMING_INVARIANTS } from '../support/invariants.js'
import { type ProcessWatch, watchProcess } from '../support/processWatch.js'
import { snapshot } from '../support/resources.js'
import { stats } from '../support/stats.js'
import { until } from '../support/until.js'

/**
 * The chaos mix, round after round, through one long-lived chain: heap,
 * handles and event-loop delay stay flat and throughput does not decay.
 * `npm test` runs the short version (6 rounds of 300 requests);
 * `npm run soak` (`HOURGLASS_SOAK=long`) runs rounds for three minutes.
 * Every round replays the same seeded plan, so rounds are comparable.
 */
const LONG = env('HOURGLASS_SOAK') === 'long'
// Short: 6 rounds, the fewest the trend checks need (2 warm-up, 2 compared
// with the last 2). 300 a round: the heap's growth is mostly per request (the
// fake provider's kept streams, ~0.4 KB each) plus ~0.3 MB of noise, so the
// 1 KB-per-request bound over 1,200 requests still has room (noise ~0.25 KB
// a request) and still fails a leak of one response (several KB) per request.
const PER_ROUND = LONG ? 1000 : 300
const ROUNDS = LONG ? Number.POSITIVE_INFINITY : 6
const DURATION_MS = LONG ? 180_000 : Number.POSITIVE_INFINITY
const CONCURRENCY = 32
/** Rounds that warm the JIT, the pools and the heap before anything is compared. */
const WARMUP = 2

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

interface Round {
  round: number
  seconds: number
  perSecond: number
  heapMb: number
  sockets: number
  timers: number
  handles: number
  loopP99Ms: number
  loopMaxMs: number
  pendingDeadlineTimers: number
  brokenPromises: number
}

describe(`soak (${LONG ? 'long: 3 minutes' : 'short'})`, () => {
  const clock = new CountingClock()
  let watch: ProcessWatch
  let chain: Chain
  const rounds: Round[] = []

  beforeAll(async () => {
    watch = watchProcess()
    chain = await startChain({ clock, watch })
    const started = performance.now()
    for (let round = 1; round <= ROUNDS && performance.now() - started < DURATION_MS; round++) {
      const loop = monitorEventLoopDelay({ resolution: 5 })
      loop.enable()
      const t = performance.now()
      const outcomes = await drive(chain, {
        requests: PER_ROUND,
        concurrency: CONCURRENCY,
        seed: 4242,
        firstOp: round * PER_ROUND,
      })
      const seconds = (performance.now() - t) / 1000
      loop.disable()
      const verdict = checkInvariants(outcomes, chain)
      chain.resetRecords()
      // A hop whose caller already has its answer may still be unwinding (a
      // cancel crossing the loopback): give the round's own deadlines up to
      // 3 s — longer than any budget of the mix — to end, then count.
      await until(() => clock.pending === 0, 3000, 'the round’s deadline timers').catch(() => {})
      gc()
      gc()
      const snap = snapshot()
      rounds.push({
        round,
        seconds,
        perSecond: PER_ROUND / seconds,
        heapMb: process.memoryUsage().heapUsed / 2 ** 20,
        sockets: snap.resources['TCPSocketWrap'] ?? 0,
        timers: snap.resources['Timeout'] ?? 0,
        handles: process.getActiveResourcesInfo().length,
        loopP99Ms: loop.percentile(99) / 1e6,
        loopMaxMs: loop.max / 1e6,
        pendingDeadlineTimers: clock.pending,
        brokenPromises: verdict.violations.filter((v) => !TIMING_INVARIANTS.has(v.invariant))
          .length,
      })
    }
    console.info(
      `soak: ${rounds.length} rounds × ${PER_ROUND} requests (chaos mix, concurrency ${CONCURRENCY})\n` +
        'round  req/s  heap MB  sockets  timers  handles  loop p99/max ms  deadline timers  broken\n' +
        rounds
          .map(
            (r) =>
              `${String(r.round).padStart(5)}  ${r.perSecond.toFixed(0).padStart(5)}  ${r.heapMb.toFixed(1).padStart(7)}  ${String(r.sockets).padStart(7)}  ${String(r.timers).padStart(6)}  ${String(r.handles).padStart(7)}  ${`${r.loopP99Ms.toFixed(1)}/${r.loopMaxMs.toFixed(1)}`.padStart(15)}  ${String(r.pendingDeadlineTimers).padStart(15)}  ${String(r.brokenPromises).padStart(6)}`,
          )
          .join('\n'),
    )
  }, 600_000)

  afterAll(async () => {
    watch.stop()
    await chain.close()
  })

  const warm = () => rounds.slice(WARMUP, WARMUP + 2)
  const last = () => rounds.slice(-2)
  const median = (values: number[]) => stats(values).median

  it('keeps every promise in every round, leaves no deadline timer, raises no warning', () => {
    expect(rounds.length).toBeGreaterThanOrEqual(WARMUP + 4)
    expect(rounds.map((r) => r.brokenPromises)).toEqual(rounds.map(() => 0))
    expect(rounds.map((r) => r.pendingDeadlineTimers)).toEqual(rounds.map(() => 0))
    expect(watch.problems()).toEqual([])
  })

  it('heap stays flat: after the warm-up it grows by less than 1 KB per request', () => {
    const base = Math.min(...warm().map((r) => r.heapMb))
    const end = Math.max(...last().map((r) => r.heapMb))
    const requests = (rounds.length - WARMUP) * PER_ROUND
    expect(((end - base) * 2 ** 20) / requests).toBeLessThan(1024)
  })

  it('handles stay flat: sockets, timers and handles never exceed the warm-up rounds by more than the pools can hold', () => {
    const most = (key: 'sockets' | 'timers' | 'handles') => Math.max(...warm().map((r) => r[key]))
    for (const r of rounds.slice(WARMUP)) {
      // Idle keep-alive sockets come and go with the mix; a leak grows every round.
      expect(r.sockets).toBeLessThanOrEqual(most('sockets') + 2 * CONCURRENCY)
      expect(r.timers).toBeLessThanOrEqual(most('timers') + 4)
      expect(r.handles).toBeLessThanOrEqual(most('handles') + 2 * CONCURRENCY + 4)
    }
    // And the last rounds are not above the first ones: no upward trend.
    expect(median(last().map((r) => r.sockets))).toBeLessThanOrEqual(
      median(warm().map((r) => r.sockets)) + CONCURRENCY,
    )
  })

  it('event-loop delay stays flat and throughput does not decay', () => {
    const loopWarm = median(warm().map((r) => r.loopP99Ms))
    const loopLast = median(last().map((r) => r.loopP99Ms))
    expect(loopLast).toBeLessThanOrEqual(Math.max(loopWarm * 3, loopWarm + 30))
    // A shared 2-core box swings ±30 % between rounds; a leak or a growing queue decays steadily.
    const rateWarm = median(warm().map((r) => r.perSecond))
    const rateLast = median(last().map((r) => r.perSecond))
    expect(rateLast).toBeGreaterThan(rateWarm * 0.6)
  })
})
