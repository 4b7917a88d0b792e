/**
 * A seeded random source, so the demo prints the same story on every run and
 * both chains see exactly the same provider behaviour for the same request.
 */
export type Random = () => number

/** mulberry32: tiny, fast, good enough for a demo's dice (not for cryptography). */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A seed from several integers (FNV-1a over their decimal text). */
export function seedOf(...parts: readonly (number | string)[]): number {
  let hash = 0x811c9dc5
  for (const ch of parts.join('/')) {
    hash ^= ch.charCodeAt(0)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

/** A log-normal draw: most values near `medianMs`, a long tail to the right. */
export function logNormalMs(random: Random, medianMs: number, sigma: number): number {
  // Box–Muller; 1 − u keeps log() away from 0.
  const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random())
  return medianMs * Math.exp(sigma * z)
}
