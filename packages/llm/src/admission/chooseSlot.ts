import type { Lane } from './slot.js'

/** What `acquire` can do now with a set of lanes (one per key). */
export type SlotChoice =
  | { kind: 'grant'; index: number; probe: boolean }
  | { kind: 'wait'; index: number; readyAt: number; wakeAt: number }
  | { kind: 'retired' }

/**
 * The first lane free now (in the caller's order of keys), else the one that
 * is expected to be free soonest, else `retired` when every lane's key is.
 * A lane is free when none of its slots (key, model, provider) is cooling or
 * waiting on a probe; it is a probe when one of them is half-open. A slot
 * whose half-open probe is in flight is expected to be free when the probe
 * has taken as long as calls take (`neededMs`), plus the followers' stagger.
 */
export function chooseSlot(
  lanes: readonly Lane[],
  now: number,
  neededMs: number,
  staggerMs: number,
): SlotChoice {
  let best: SlotChoice | undefined
  let live = 0
  for (const [index, lane] of lanes.entries()) {
    if (lane.some((slot) => slot.retiredUntilMs > now)) continue
    live++
    let blocked = false
    let probe = false
    let readyAt = now
    let wakeAt = Number.POSITIVE_INFINITY
    for (const slot of lane) {
      if (slot.untilMs > now) {
        blocked = true
        readyAt = Math.max(readyAt, slot.untilMs)
        wakeAt = Math.min(wakeAt, slot.untilMs)
      } else if (slot.halfOpen && slot.probe && slot.probe.leaseUntil > now) {
        blocked = true
        readyAt = Math.max(readyAt, Math.max(now, slot.probe.startedAt + neededMs) + staggerMs)
        wakeAt = Math.min(wakeAt, slot.probe.leaseUntil)
      } else if (slot.halfOpen) {
        probe = true
      }
    }
    if (!blocked) return { kind: 'grant', index, probe }
    if (!best || (best.kind === 'wait' && readyAt < best.readyAt)) {
      best = { kind: 'wait', index, readyAt, wakeAt }
    }
  }
  return live === 0 || !best ? { kind: 'retired' } : best
}
