/**
 * The knobs the reliability suites read from the environment (vitest runs
 * outside turbo, so turbo's env lists do not apply):
 *
 * - `HOURGLASS_SEED`: replay a chaos run;
 * - `HOURGLASS_CHAOS_REQUESTS`: size of the chaos run;
 * - `HOURGLASS_SOAK=long`: the few-minute soak (`npm run soak`).
 */
export function env(name: 'HOURGLASS_SEED' | 'HOURGLASS_CHAOS_REQUESTS' | 'HOURGLASS_SOAK') {
  return process.env[name as string]
}

/** A positive integer from the environment, else `fallback`. */
export function envInt(name: 'HOURGLASS_SEED' | 'HOURGLASS_CHAOS_REQUESTS', fallback: number) {
  const value = Number(env(name))
  return Number.isInteger(value) && value > 0 ? value : fallback
}
