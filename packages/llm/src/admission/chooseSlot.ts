import type { Slot } from './slot.js'

/** What `acquire` can do now with a set of slots (one per key). */
export type SlotChoice =
  | { kind: 'grant'; index: number; probe: boolean }
  | { kind: 'wait'; index: number; readyAt: number; wakeAt: number }
  | { kind: 'retired' }

/**
 * The first slot free now (in the caller's order of keys), else the one that
 * is expected to be free soonest, else `retired` when every slot is. A slot
 * whose half-open probe is in flight is expected to be free when the probe
 * has taken as long as calls take (`neededMs`), plus the followers' stagger.
 */
export function chooseSlot(
  slots: readonly Slot[],
  now: number,
  neededMs: number,
  staggerMs: number,
): SlotChoice {
  let best: SlotChoice | undefined
  let live = 0
  for (const [index, slot] of slots.entries()) {
    if (slot.retiredUntilMs > now) continue
    live++
    let readyAt: number
    let wakeAt: number
    if (slot.untilMs > now) {
      readyAt = slot.untilMs
      wakeAt = slot.untilMs
    } else if (slot.halfOpen && slot.probe && slot.probe.leaseUntil > now) {
      readyAt = Math.max(now, slot.probe.startedAt + neededMs) + staggerMs
      wakeAt = slot.probe.leaseUntil
    } else {
      return { kind: 'grant', index, probe: slot.halfOpen }
    }
    if (!best || (best.kind === 'wait' && readyAt < best.readyAt)) {
      best = { kind: 'wait', index, readyAt, wakeAt }
    }
  }
  return live === 0 || !best ? { kind: 'retired' } : best
}
