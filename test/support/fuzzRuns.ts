import { env, envInt } from './env.js'

/**
 * How many cases a fuzz property runs: `quick` in `npm test`, `long` under
 * `HOURGLASS_SOAK=long` (the same knob as the long soak), and exactly
 * `HOURGLASS_FUZZ_RUNS` when that is set. `npm test` sits near its
 * five-minute bound on two cores: its fuzz counts are what each property
 * needs to reach every branch of its generators (each file counts the
 * branches it drew and asserts none was missed), and the long counts are
 * for hunting rare combinations.
 */
export function fuzzRuns(quick: number, long: number): number {
  return envInt('HOURGLASS_FUZZ_RUNS', env('HOURGLASS_SOAK') === 'long' ? long : quick)
}
