import type { Deadline } from './Deadline.js'
import { defineChannel, defineChannels } from './defineChannel.js'

export interface DeadlineCreateMessage {
  deadline: Deadline
  budgetMs: number
  remainingMs: number
}

export interface DeadlineExpireMessage {
  deadline: Deadline
  budgetMs: number
  elapsedMs: number
  /** True when the deadline only observes (dark mode): nothing was aborted. */
  observe: boolean
}

export interface DeadlineCancelMessage {
  deadline: Deadline
  reason: unknown
}

export interface SliceStartMessage {
  deadline: Deadline
  slice: string
  allottedMs: number
}

export interface SliceEndMessage {
  deadline: Deadline
  slice: string
  allottedMs: number
  usedMs: number
  outcome: SliceOutcome
  error?: unknown
}

/**
 * Where a slice stands: `ok` (finished in time), `exceeded` (its time or the
 * whole deadline ran out), `observed` (dark mode: it finished, but after its
 * time had run out, which was only observed; enforced it would have been
 * `exceeded`), `failed` (threw something else), `cancelled` (aborted, e.g.
 * the client left), `running`, `not-started`.
 */
export type SliceOutcome =
  | 'ok'
  | 'exceeded'
  | 'observed'
  | 'failed'
  | 'cancelled'
  | 'running'
  | 'not-started'

/**
 * The diagnostics channels core publishes on: a deadline's life and its
 * slices'. Every other package exports its own group (`expressChannels`,
 * `fetchChannels`, …) with its message types.
 */
export const coreChannels = defineChannels('core', {
  /** A deadline was created (`Deadline.after`, a child of another). */
  deadlineCreate: defineChannel<DeadlineCreateMessage>('hourglass:deadline:create'),
  /** A deadline's time ran out (also in dark mode, with `observe: true`). */
  deadlineExpire: defineChannel<DeadlineExpireMessage>('hourglass:deadline:expire'),
  /**
   * `cancel()` ended a deadline (the caller left; a parent was cancelled; an
   * observe-only child's enforcing parent expired, with the parent's reason).
   */
  deadlineCancel: defineChannel<DeadlineCancelMessage>('hourglass:deadline:cancel'),
  /** A slice of a plan started. */
  sliceStart: defineChannel<SliceStartMessage>('hourglass:slice:start'),
  /** A slice of a plan ended, with its outcome. */
  sliceEnd: defineChannel<SliceEndMessage>('hourglass:slice:end'),
})

declare module './defineChannel.js' {
  interface ChannelGroups {
    core: typeof coreChannels
  }
}
