// Node's own, not the global: see `thisTurn`.
import { setImmediate } from 'node:timers'

/** One turn of the event loop: `over` once the next `setImmediate` phase has run. */
export interface Turn {
  over: boolean
}

let currentTurn: Turn | undefined

/**
 * The turn running now. One `setImmediate` for every call started in it,
 * not one per call: a turn ends, for this purpose, when the immediates
 * queued in it run — after every microtask queued with the calls started
 * in it, grpc-js's creation of their streams included.
 *
 * grpc-js 1.14 sends a call it was told to cancel before it had made its
 * stream, and never resets it: a cancel within the turn the call was made
 * in is passed on once the turn is over (see `ClientCall`, `cancelOnDestroy`).
 *
 * A turn of the real loop, through `node:timers`' own `setImmediate`: fake
 * timers (`vi.useFakeTimers()`, Jest's) replace the global one, and a turn
 * never ended until the test moved fake time.
 */
export function thisTurn(): Turn {
  if (currentTurn) return currentTurn
  const turn: Turn = { over: false }
  currentTurn = turn
  setImmediate(() => {
    turn.over = true
    if (currentTurn === turn) currentTurn = undefined
  })
  return turn
}
