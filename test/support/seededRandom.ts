import { envInt } from './env.js'

/**
 * mulberry32: a tiny seeded generator, so a failing chaos run can be replayed
 * exactly with `HOURGLASS_SEED=<seed>`.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The seed of this run: `HOURGLASS_SEED` when set, else a fresh one (printed by the suites). */
export function runSeed(): number {
  return envInt('HOURGLASS_SEED', (Date.now() % 2 ** 31) + 1)
}

/** Pick one entry with the given weights. */
export function weighted<T>(random: () => number, entries: readonly (readonly [T, number])[]): T {
  const total = entries.reduce((sum, [, w]) => sum + w, 0)
  let at = random() * total
  for (const [value, w] of entries) {
    at -= w
    if (at < 0) return value
  }
  return entries[entries.length - 1]![0]
}
