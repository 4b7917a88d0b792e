import { chooseSlot } from './chooseSlot.js'
import { byPlace, type Place, type Slot, wake } from './slot.js'

/*
 * The line of callers waiting on a slot, in the order they came (since
 * their call began waiting, then by `acquire` order). When a cooldown ends, the caller waiting
 * longest sends the probe; when the probe answers, the others follow in the
 * same order, spread over `staggerMs`. Whoever came first is answered first —
 * the tail of a rate-limit window is its earliest callers.
 */

/** Wake a waiter when anything changes on one of `slots` (a cooldown ends, a probe reports). */
export function onChange(slots: readonly Slot[], wake: () => void, place: Place): () => void {
  for (const slot of slots) slot.wakers.set(wake, place)
  return () => {
    for (const slot of slots) slot.wakers.delete(wake)
  }
}

/**
 * Whether the caller at `place` may send `slot`'s probe now: the one waiting
 * longest sends it. A younger caller that looks first keeps the probe for
 * the oldest waiter, wakes that one, and waits with the rest. Only for a
 * waiter that can go now: one held by another of its slots (its own model
 * cooling on the key, say, while the provider's overload has ended) would
 * not take it, and the probe kept for it held every other model's calls
 * until that cooldown ended or their deadlines did.
 */
export function mayProbe(slot: Slot, place: Place, now: number): boolean {
  if (slot.probeFor !== undefined) {
    if (slot.probeFor === place) return true
    // Kept for a caller that has become unable to take it: chosen again.
    if (canGo(slot.probeFor, now)) return false
    slot.probeFor = undefined
  }
  let oldest = place
  for (const other of slot.line) {
    if (byPlace(other, oldest) < 0 && canGo(other, now)) oldest = other
  }
  if (oldest === place) return true
  slot.probeFor = oldest
  // Waiting: wake it. Otherwise it is looking again already and will find the probe kept.
  for (const [waker, waiter] of slot.wakers) if (waiter === oldest) waker()
  return false
}

/** Whether the caller at `place` could be granted now: none of its lanes is held but for a probe to send. */
function canGo(place: Place, now: number): boolean {
  if (place.waitingForWindow === true) return false
  return place.lanes === undefined || chooseSlot(place.lanes, now, 0, 0).kind === 'grant'
}

/** `place` joins the line of each of `slots`. */
export function joinLine(slots: readonly Slot[], place: Place): void {
  for (const slot of slots) slot.line.add(place)
}

/** `place` leaves the line; a probe kept for it and not taken goes to the next in line. */
export function leaveLine(slots: readonly Slot[], place: Place): void {
  for (const slot of slots) slot.line.delete(place)
  passProbes(slots, place)
}

/** A probe kept for `place`, which will not take it now, goes to the next in line. */
export function passProbes(slots: readonly Slot[], place: Place): void {
  for (const slot of slots) {
    if (slot.probeFor === place) {
      slot.probeFor = undefined
      wake(slot)
    }
  }
}

/** When the caller at `place` follows `opened`'s successful probe: its rank in line × staggerMs / line length. */
export function followerDelayMs(opened: Slot, place: Place, staggerMs: number): number {
  const { followers } = opened
  return (staggerMs * countBefore(followers, place)) / Math.max(1, followers.length)
}

/** How many of `sorted` (in line order) come before `place`. */
function countBefore(sorted: readonly Place[], place: Place): number {
  let low = 0
  let high = sorted.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if (byPlace(sorted[mid] as Place, place) < 0) low = mid + 1
    else high = mid
  }
  return low
}
