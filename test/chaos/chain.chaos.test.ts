import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CountingClock } from '../support/CountingClock.js'
import { type Chain, startChain } from '../support/chain.js'
import { drive } from '../support/drive.js'
import { envInt } from '../support/env.js'
import { FAULT_MIX } from '../support/faultCatalogue.js'
import {
  type InvariantName,
  mergeVerdicts,
  SLACK_MS,
  TIMING_INVARIANTS,
  type Verdict,
} from '../support/invariants.js'
import { type ProcessWatch, watchProcess } from '../support/processWatch.js'
import { growthAfterClosing, type ResourceSnapshot, snapshot } from '../support/resources.js'
import { runSeed } from '../support/seededRandom.js'
import {
  MIN_ROUNDS,
  type SoakRound,
  showRounds,
  soakRound,
  soakTests,
} from '../support/soakRounds.js'
import { showStats, stats } from '../support/stats.js'

/**
 * The chaos run: a seeded mix of every fault testkit has, mixed budgets and
 * early disconnects, through edge → fetch → model service → fetch / callModel
 * → fault server / fake provider. Every promise is checked per request; the
 * counts are printed so a reader sees what was tried. `HOURGLASS_SEED=<n>`
 * replays a run; `HOURGLASS_CHAOS_REQUESTS` changes its size (default 2,000).
 *
 * Its requests are sent in rounds, and the rounds are the short soak of
 * `npm test` (the long one is `npm run soak`, test/soak): after each round
 * the soak measures heap, handles, event-loop delay and throughput, and
 * asserts they stay flat. One chain, one set of rounds: run apart, the two
 * drove the same mix through the same chain for ~23 s of serial test time.
 */
const REQUESTS = envInt('HOURGLASS_CHAOS_REQUESTS', 2000)
const CONCURRENCY = 32
/**
 * The fewest rounds the soak's trend checks need (2 warm-up, then 2 compared
 * with the last 2), ~334 requests each. The heap grows mostly per request
 * (the fake provider's kept streams, ~0.4 KB each) plus ~0.3 MB of noise, so
 * the 1 KB-per-request bound over ~1,330 requests still has room and still
 * fails a leak of one response (several KB) per request. Round `r` sends its
 * own seeded plan (seed + r; the warm-up is round 0), so the run still
 * covers REQUESTS different requests and one seed replays all of it.
 */
const ROUNDS = MIN_ROUNDS
const roundSize = (round: number) =>
  Math.floor(REQUESTS / ROUNDS) + (round <= REQUESTS % ROUNDS ? 1 : 0)
/**
 * Requests sent first and not judged: the first few hundred milliseconds of
 * a fresh process (code not yet optimised, pools and sockets opening) are
 * slower than any later moment, and that is the machine warming, not a
 * promise broken. The soak's comparisons leave out whole rounds for the
 * same reason (its first two, judged here all the same).
 */
const WARMUP_REQUESTS = 128
/**
 * Keep-alive of the hops' fetch pools. The run waits twice until no hop holds
 * a connection or a request (before the baseline, and after the last round
 * for the growth check), and an unused pooled connection closes on its own
 * only at this timeout: at undici's default here, 3 s, that was 3–6 s of a
 * ~16 s file spent waiting; at 1 s it is ~1 s each. Pooled connections are still reused
 * between requests (the fault server accepted 287 and 294 connections in two
 * quiet runs, about what it did at 3 s). 250 ms was tried: it saved ~1.5 s
 * more, but the fault server accepted ~15 % more connections and two runs of
 * four went over the timing allowance (107 and 128 misses), so not that.
 */
const KEEP_ALIVE_MS = 1000
const seed = runSeed()
/** The promises that a hop stops the work it passed on once its caller has given up. */
const STOP_INVARIANTS: ReadonlySet<InvariantName> = new Set<InvariantName>([
  'the model service stopped within 15 ms (beyond the loop) of the edge giving up',
  'upstream work stopped within 15 ms (beyond the loop) of the service giving up',
])

describe(`chaos through the three-hop chain (seed ${seed})`, () => {
  const clock = new CountingClock()
  let watch: ProcessWatch
  let chain: Chain
  let baseline: ResourceSnapshot
  let verdict: Verdict
  const rounds: SoakRound[] = []
  // What the run tried, counted round by round (the rounds' outcomes are not kept).
  const tried = { requests: 0, disconnects: 0, zeroBudgets: 0, leftBeforeAnswer: 0 }
  const badGateways = new Map<string, number>()
  const modelCalls = { requests: 0, paid: 0 }

  beforeAll(async () => {
    watch = watchProcess()
    chain = await startChain({ clock, watch, keepAliveMs: KEEP_ALIVE_MS })
    await drive(chain, {
      requests: WARMUP_REQUESTS,
      concurrency: CONCURRENCY,
      seed,
      firstOp: 1_000_000,
    })
    // The baseline is taken when the warm-up's work is over on every hop and
    // every connection it opened has closed on its own.
    let waited = performance.now()
    await chain.idle()
    const idleAfterWarmUp = performance.now() - waited
    chain.resetRecords()
    baseline = snapshot()
    const connectionsBefore = chain.upstream.totalConnections
    let run: Verdict | undefined
    for (let round = 1, firstOp = 0; round <= ROUNDS; firstOp += roundSize(round), round++) {
      rounds.push(
        await soakRound(chain, clock, {
          round,
          requests: roundSize(round),
          concurrency: CONCURRENCY,
          seed: seed + round,
          firstOp,
          judged: (outcomes, roundVerdict) => {
            run = mergeVerdicts(run, roundVerdict)
            tried.requests += outcomes.length
            for (const o of outcomes) {
              if (o.abortAfterMs !== undefined) tried.disconnects++
              if (o.budgetMs === 0) tried.zeroBudgets++
              if (o.abortedAt !== undefined && o.arrivedAt === undefined) tried.leftBeforeAnswer++
            }
            for (const [k, n] of chain.badGateways)
              badGateways.set(k, (badGateways.get(k) ?? 0) + n)
            for (const r of chain.providerRequests()) {
              modelCalls.requests++
              if (r.paid) modelCalls.paid++
            }
          },
        }),
      )
    }
    // Wait until every hop has let go of every connection the run opened.
    waited = performance.now()
    await chain.idle()
    const idleAfterRun = performance.now() - waited
    if (run === undefined) throw new Error('the chaos run judged no round')
    verdict = run
    const f = verdict.figures
    console.info(
      [
        `chaos seed ${seed}: ${tried.requests} requests in ${ROUNDS} rounds at concurrency ${CONCURRENCY}`,
        `  faults injected: ${[...verdict.faults].map(([k, n]) => `${k} ${n}`).join(', ')}`,
        `  client disconnects: ${tried.disconnects}, budgets 0 ms: ${tried.zeroBudgets}`,
        `  stuck DNS lookups abandoned: ${chain.stuckLookups}`,
        `  answers: ${[...verdict.statuses].map(([k, n]) => `${k} ${n}`).join(', ')}`,
        `  502 causes: ${[...badGateways].map(([k, n]) => `${k} ${n}`).join(', ')}`,
        `  invariant checks: ${[...verdict.checks].map(([k, n]) => `\n    ${n} × ${k}`).join('')}`,
        `  total checks ${[...verdict.checks.values()].reduce((a, b) => a + b, 0)}, violations ${verdict.violations.length}${verdict.violations.map((v) => `\n    ${v.text}`).join('')}`,
        `  lateness vs the edge's deadline (raw): ${showStats(stats(f.rawLateness))}`,
        `  the same, budgets above the largest reserve (100 ms): ${showStats(stats(f.roomyLateness))}`,
        `  lateness beyond a plain timer due then (toolkit-added): ${showStats(stats(f.addedLateness))}`,
        `  lateness vs client send + budget (transit included): ${showStats(stats(f.clientLateness))}`,
        `  next hop stopped, after its caller's deadline: ${showStats(stats(f.stopAfterDeadline))}`,
        `  next hop stopped, after its caller left: ${showStats(stats(f.stopAfterDisconnect))}`,
        `  requests that reached the model service after the edge gave up: ${showStats(stats(f.lateArrivals))}`,
        `  model calls: ${modelCalls.requests} provider requests, paid ${modelCalls.paid}`,
        `  deadline/phase timers armed ${clock.armed}, still pending ${clock.pending}`,
        `  connections the fault server accepted: ${chain.upstream.totalConnections - connectionsBefore} (keep-alive ${KEEP_ALIVE_MS} ms)`,
        `  waited for every hop to let go of its connections: ${idleAfterWarmUp.toFixed(0)} ms after the warm-up, ${idleAfterRun.toFixed(0)} ms after the run`,
      ].join('\n'),
    )
    console.info(
      showRounds(
        `soak: the chaos run's ${ROUNDS} rounds (concurrency ${CONCURRENCY}), measured after each`,
        rounds,
      ),
    )
  }, 120_000)

  afterAll(async () => {
    watch.stop()
    await chain.close()
  })

  it('injects every fault in the catalogue, and sends budgets of 0 ms and early disconnects', () => {
    for (const [kind] of FAULT_MIX) expect(verdict.faults.get(kind) ?? 0).toBeGreaterThan(0)
    expect(tried.zeroBudgets).toBeGreaterThan(0)
    expect(tried.leftBeforeAnswer).toBeGreaterThan(0)
    expect(chain.stuckLookups).toBeGreaterThan(0)
  })

  it('judges every request of the run, in its rounds', () => {
    expect(tried.requests).toBe(REQUESTS)
    expect(verdict.checks.get('the client saw an answer or left (no reset, no hang)')).toBe(
      REQUESTS,
    )
  })

  it('never runs a side effect twice, never answers 200 with a half body, never shows U+FFFD, never resets the client', () => {
    const broken = verdict.violations.filter((v) => !TIMING_INVARIANTS.has(v.invariant))
    expect(broken.map((v) => v.text)).toEqual([])
    expect([...verdict.checks.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(REQUESTS * 5)
  })

  it('answers by the deadline + 15 ms and stops upstream work within 15 ms of the deadline or the disconnect, beyond what the loop itself adds', () => {
    // Checked per request. On two cores shared with other test runs the
    // process itself is sometimes descheduled for tens of ms, which no control
    // timer sees coming: up to 2 % of the timing checks may miss by a little
    // (each is printed above), none by more than 250 ms, none never. With the
    // stops timed against the end of their FIN's loop turn (loopbackPing),
    // five runs had 0, 0, 0, 0 and 3 misses in ~5,000 timing checks, two of
    // them beside a busy loop on one core (before: 7–26 locally, 3–89 in CI,
    // most of them stops charged for their turn's other callbacks).
    const timing = verdict.violations.filter((v) => TIMING_INVARIANTS.has(v.invariant))
    const timingChecks = [...verdict.checks]
      .filter(([name]) => TIMING_INVARIANTS.has(name))
      .reduce((sum, [, n]) => sum + n, 0)
    expect(timing.length).toBeLessThanOrEqual(Math.ceil(timingChecks * 0.02))
    expect(timing.filter((v) => !(v.excessMs <= 250)).map((v) => v.text)).toEqual([])
    expect(stats(verdict.figures.addedLateness).p99).toBeLessThan(SLACK_MS)
    // The stops on their own, at 1 %: timed against the end of the loop turn
    // their FIN was read in (loopbackPing), they miss 0–1 times a run, loaded
    // or not, while a hop that stops 20 ms after its caller left misses ~60
    // times. Within the 2 % above, such a hop passed: stops after a
    // disconnect are a tenth of the checks, diluted by the rest.
    const stops = [...STOP_INVARIANTS]
    const stopMisses = timing.filter((v) => STOP_INVARIANTS.has(v.invariant))
    const stopChecks = stops.reduce((sum, name) => sum + (verdict.checks.get(name) ?? 0), 0)
    expect(stopChecks).toBeGreaterThan(REQUESTS / 2)
    expect(stopMisses.length).toBeLessThanOrEqual(Math.ceil(stopChecks * 0.01))
  })

  it('raises no unhandled rejection, uncaught exception, "headers already sent" or MaxListenersExceededWarning', () => {
    expect(watch.problems()).toEqual([])
  })

  it('leaves no deadline or phase timer, socket, timer or listener beyond the baseline', async () => {
    expect(clock.pending).toBe(0)
    expect(await growthAfterClosing(baseline, () => chain.closePools())).toEqual({})
  })

  describe('as the short soak, round after round', () =>
    soakTests(() => rounds, CONCURRENCY, { heapSlackMb: 1 }))
})
