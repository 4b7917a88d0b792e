import diagnostics from 'node:diagnostics_channel'
import type { Deadline } from './Deadline.js'
import type { DeadlineSource } from './headerNames.js'
import type { InvalidDeadlineHeader } from './readDeadline.js'

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

/** @hourglass/express → `hourglass:ingress:start`. `req` is the framework's request object. */
export interface IngressStartMessage {
  deadline: Deadline
  req: unknown
  budgetMs: number
  /** The header the budget came from, or `default`. */
  source: DeadlineSource | 'default'
  /** True when the inbound value was cut to `maxMs`. */
  clamped: boolean
  mode: 'enforce' | 'observe'
}

/** @hourglass/express → `hourglass:ingress:invalid-header`. */
export interface IngressInvalidHeaderMessage {
  req: unknown
  invalid: InvalidDeadlineHeader[]
}

/** @hourglass/express → `hourglass:ingress:expire`. */
export interface IngressExpireMessage {
  deadline: Deadline
  req: unknown
  budgetMs: number
  elapsedMs: number
  /** The slice running when time ran out, if known. */
  slice?: string | undefined
  /** `arrival`: the budget was 0 when the request came in; `handler`: it ran out while handling. */
  stage: 'arrival' | 'handler'
  /** `504` answered; `ended` a started (streaming) response was ended; `observed` dark mode did nothing. */
  action: '504' | 'ended' | 'observed'
}

/** @hourglass/express → `hourglass:ingress:client-closed`. */
export interface IngressClientClosedMessage {
  deadline: Deadline
  req: unknown
  elapsedMs: number
}

/** @hourglass/express → `hourglass:ingress:late-write`. */
export interface IngressLateWriteMessage {
  req: unknown
  /** The response method the handler called too late (`write`, `end`, `setHeader`, …). */
  method: string
}

/** @hourglass/express → `hourglass:ingress:end`: the request's resources are released. */
export interface IngressEndMessage {
  deadline: Deadline
  req: unknown
  statusCode: number
  elapsedMs: number
  /** `ok` finished in time; `expired` answered/ended by the deadline; `client-closed` caller left. */
  outcome: 'ok' | 'expired' | 'client-closed'
}

/** @hourglass/fetch → `hourglass:egress:attempt`. URLs carry origin and path only (no query: it may hold secrets). */
export interface EgressAttemptMessage {
  deadline: Deadline | undefined
  method: string
  url: string
  /** 1 for the first attempt. */
  attempt: number
  /** What was left when the attempt started (Infinity without a deadline). */
  remainingMs: number
  /** The `x-deadline-remaining-ms` value written, if any. */
  headerMs: number | undefined
}

/** @hourglass/fetch → `hourglass:egress:attempt-end`. */
export interface EgressAttemptEndMessage {
  deadline: Deadline | undefined
  method: string
  url: string
  attempt: number
  elapsedMs: number
  statusCode?: number | undefined
  /** The failure's stable code (`CONNECT_TIMEOUT`, `DEADLINE_EXCEEDED`, …) when the attempt failed. */
  errorCode?: string | undefined
  /** Which phase failed: `dns`, `connect`, `headers`, `body`. */
  phase?: string | undefined
  bytesReceived: number
}

/** @hourglass/fetch → `hourglass:egress:retry`. */
export interface EgressRetryMessage {
  deadline: Deadline | undefined
  method: string
  url: string
  /** The attempt that is about to start (2 for the first retry). */
  attempt: number
  /** The failure code that justified the retry. */
  reason: string
  delayMs: number
}

/** @hourglass/fetch → `hourglass:egress:retry-skipped`. */
export interface EgressRetrySkippedMessage {
  deadline: Deadline | undefined
  method: string
  url: string
  attempt: number
  reason: string
  /** Why no retry: e.g. `no-budget`, `after-first-byte`, `not-idempotent`, `upstream-deadline`, `not-retryable`, `already-retried`. */
  why: string
}

/** @hourglass/llm → `hourglass:llm:attempt`: one model attempt and what was decided after it. */
export interface LlmAttemptMessage {
  deadline: Deadline | undefined
  attempt: number
  model: string
  provider: string
  status?: number | undefined
  /** Class name of the error, when the attempt failed. */
  errorClass?: string | undefined
  /** The normalised failure kind (`rate_limited`, `overloaded`, …). */
  errorKind?: string | undefined
  latencyMs: number
  decision: 'success' | 'retry' | 'fallback' | 'fail'
  delayMs?: number | undefined
  promptVersion?: string | undefined
  costUsd: number
  inputTokens?: number | undefined
  outputTokens?: number | undefined
}

/** @hourglass/llm → `hourglass:llm:cooldown`. `keyId` is a short non-reversible id, never the key. */
export interface LlmCooldownMessage {
  provider: string
  keyId: string
  state: 'start' | 'extend' | 'end'
  /**
   * When the cooldown ends, in wall-clock epoch ms (Infinity for a key retired
   * until restart). Wall-clock, unlike deadlines, because the same cooldown is
   * shared across hosts through Redis.
   */
  untilMs: number
  reason: string
}

/** @hourglass/llm → `hourglass:llm:admission`. */
export interface LlmAdmissionMessage {
  provider: string
  keyId: string
  action: 'wait' | 'switch-key' | 'fallback' | 'fail' | 'probe'
  waitMs: number
}

export const deadlineCreateChannel = diagnostics.channel(channelNames.deadlineCreate)
export const deadlineExpireChannel = diagnostics.channel(channelNames.deadlineExpire)
export const deadlineCancelChannel = diagnostics.channel(channelNames.deadlineCancel)
export const sliceStartChannel = diagnostics.channel(channelNames.sliceStart)
export const sliceEndChannel = diagnostics.channel(channelNames.sliceEnd)
