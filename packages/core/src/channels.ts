import diagnostics from 'node:diagnostics_channel'
import type { Deadline } from './Deadline.js'

/**
 * Every diagnostics channel Hourglass publishes on, in one place, so tracing
 * (@hourglass/otel, or your own subscriber) can find them without importing
 * Express, undici or any other framework. Publishing is skipped entirely when
 * a channel has no subscriber.
 *
 * Core publishes the `deadline:*` and `slice:*` channels. The other packages
 * publish theirs and document the message shapes next to the code that sends
 * them.
 */
export const channelNames = {
  deadlineCreate: 'hourglass:deadline:create',
  deadlineExpire: 'hourglass:deadline:expire',
  deadlineCancel: 'hourglass:deadline:cancel',
  sliceStart: 'hourglass:slice:start',
  sliceEnd: 'hourglass:slice:end',
  /** @hourglass/express: a request got its deadline. */
  ingressStart: 'hourglass:ingress:start',
  /** @hourglass/express: an inbound deadline header was malformed. */
  ingressInvalidHeader: 'hourglass:ingress:invalid-header',
  /** @hourglass/express: a request ran out of time (answered 504, or observed in dark mode). */
  ingressExpire: 'hourglass:ingress:expire',
  /** @hourglass/express: the client went away before the response finished. */
  ingressClientClosed: 'hourglass:ingress:client-closed',
  /** @hourglass/express: a handler wrote after the deadline answered for it. */
  ingressLateWrite: 'hourglass:ingress:late-write',
  /** @hourglass/express: the response finished (or was abandoned); the request's resources are released. */
  ingressEnd: 'hourglass:ingress:end',
  /** @hourglass/fetch: one outbound attempt begins. */
  egressAttempt: 'hourglass:egress:attempt',
  /** @hourglass/fetch: one outbound attempt ended (ok or failed). */
  egressAttemptEnd: 'hourglass:egress:attempt-end',
  /** @hourglass/fetch: a failed attempt will be retried. */
  egressRetry: 'hourglass:egress:retry',
  /** @hourglass/fetch: a failed attempt will not be retried, and why. */
  egressRetrySkipped: 'hourglass:egress:retry-skipped',
  /** @hourglass/llm: one model attempt ended, with its decision. */
  llmAttempt: 'hourglass:llm:attempt',
  /** @hourglass/llm: a provider (and key) started or ended a cooldown. */
  llmCooldown: 'hourglass:llm:cooldown',
  /** @hourglass/llm: a call waited for admission to a cooling provider. */
  llmAdmission: 'hourglass:llm:admission',
} as const

export type ChannelName = (typeof channelNames)[keyof typeof channelNames]

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
 * whole deadline ran out), `failed` (threw something else), `cancelled`
 * (aborted, e.g. the client left), `running`, `not-started`.
 */
export type SliceOutcome = 'ok' | 'exceeded' | 'failed' | 'cancelled' | 'running' | 'not-started'

export const deadlineCreateChannel = diagnostics.channel(channelNames.deadlineCreate)
export const deadlineExpireChannel = diagnostics.channel(channelNames.deadlineExpire)
export const deadlineCancelChannel = diagnostics.channel(channelNames.deadlineCancel)
export const sliceStartChannel = diagnostics.channel(channelNames.sliceStart)
export const sliceEndChannel = diagnostics.channel(channelNames.sliceEnd)
