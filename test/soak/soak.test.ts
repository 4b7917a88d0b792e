import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CountingClock } from '../support/CountingClock.js'
import { type Chain, startChain } from '../support/chain.js'
import { env } from '../support/env.js'
import { type ProcessWatch, watchProcess } from '../support/processWatch.js'
import { type SoakRound, showRounds, soakRound, soakTests } from '../support/soakRounds.js'

/**
 * The long soak (`npm run soak`, `HOURGLASS_SOAK=long`): the chaos mix round
 * after round for three minutes through one long-lived chain; heap, handles
 * and event-loop delay stay flat and throughput does not decay. Every round
 * replays the same seeded plan, so rounds are comparable. The short soak of
 * `npm test` is the chaos run's rounds (test/chaos/chain.chaos.test.ts),
 * measured and asserted by the same code (support/soakRounds.ts).
 */
const LONG = env('HOURGLASS_SOAK') === 'long'
const PER_ROUND = 1000
const DURATION_MS = 180_000
const CONCURRENCY = 32

describe.skipIf(!LONG)(
  'soak (long: 3 minutes; in npm test the short soak is the chaos run’s rounds)',
  () => {
    const clock = new CountingClock()
    let watch: ProcessWatch
    let chain: Chain
    const rounds: SoakRound[] = []

    beforeAll(async () => {
      watch = watchProcess()
      chain = await startChain({ clock, watch })
      const started = performance.now()
      for (let round = 1; performance.now() - started < DURATION_MS; round++) {
        rounds.push(
          await soakRound(chain, clock, {
            round,
            requests: PER_ROUND,
            concurrency: CONCURRENCY,
            seed: 4242,
            firstOp: round * PER_ROUND,
          }),
        )
      }
      console.info(
        showRounds(
          `soak: ${rounds.length} rounds × ${PER_ROUND} requests (chaos mix, concurrency ${CONCURRENCY})`,
          rounds,
        ),
      )
    }, 600_000)

    afterAll(async () => {
      watch.stop()
      await chain.close()
    })

    soakTests(() => rounds, CONCURRENCY)

    it('raises no unhandled rejection, uncaught exception, "headers already sent" or warning', () => {
      expect(watch.problems()).toEqual([])
    })
  },
)
