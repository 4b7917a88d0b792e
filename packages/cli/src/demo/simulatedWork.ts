import { wait } from '@hourglass/core'
import { seededRandom, seedOf } from './random.js'

/**
 * The API service's own steps besides the model call, with seeded costs:
 * preprocessing (parse, look up the user, build the prompt) is usually
 * 15–45 ms, and one request in ten hits a cold cache (~220 ms); writing
 * (validate, log, serialise) takes a few ms. Every step costs time, not just
 * the model call.
 */
export function preprocessMs(seed: number, caseId: string): number {
  const random = seededRandom(seedOf(seed, caseId, 'preprocess'))
  return random() < 0.1 ? 200 + Math.round(random() * 40) : 15 + Math.round(random() * 30)
}

export function writeMs(seed: number, caseId: string): number {
  return 2 + Math.round(seededRandom(seedOf(seed, caseId, 'write'))() * 6)
}

/** Simulated work that stops when `signal` aborts (rejecting with its reason). */
export async function work(ms: number, signal?: AbortSignal): Promise<void> {
  await wait(ms, { signal })
}
