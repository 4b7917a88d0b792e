import { isClientClosed } from '@hourglass/core'
import type { LlmAttemptMessage } from '../llm.js'

/**
 * The attempt was stopped because the request's client hung up: llm says
 * only that the call was ended (`aborted`, decision `fail`); the call's
 * deadline says why — the ingress cancels it with `ClientClosedError` when
 * the client leaves, a drain with its shutdown reason. The provider did not
 * fail, nor did the gateway: counted and logged as a client that left, not
 * as a failed attempt (an alert on failures must not fire on clients that
 * close a tab).
 */
export function leftByClient(attempt: Pick<LlmAttemptMessage, 'errorKind' | 'deadline'>): boolean {
  return (
    attempt.errorKind === 'aborted' &&
    attempt.deadline?.done === true &&
    isClientClosed(attempt.deadline.reason)
  )
}
