/**
 * The knobs the reliability suites read from the environment (vitest runs
 * outside turbo, so turbo's env lists do not apply):
 *
 * - `HOURGLASS_SEED`: replay a chaos run;
 * - `HOURGLASS_CHAOS_REQUESTS`: size of the chaos run;
 * - `HOURGLASS_FUZZ_RUNS`: cases of each fuzz property, exactly (otherwise
 *   `fuzzRuns`: a quick count in `npm test`, a long one under
 *   `HOURGLASS_SOAK=long`);
 * - `HOURGLASS_SOAK=long`: the few-minute soak (`npm run soak`), and the
 *   fuzzes' long counts.
 */
type Knob = 'HOURGLASS_SEED' | 'HOURGLASS_CHAOS_REQUESTS' | 'HOURGLASS_FUZZ_RUNS' | 'HOURGLASS_SOAK'

export function env(name: Knob) {
  return process.env[name as string]
}

/** A positive integer from the environment, else `fallback`. */
export function envInt(name: Exclude<Knob, 'HOURGLASS_SOAK'>, fallback: number) {
  const value = Number(env(name))
  return Number.isInteger(value) && value > 0 ? value : fallback
}
