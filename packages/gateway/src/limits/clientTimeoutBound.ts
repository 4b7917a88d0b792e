import { currentDeadline, Deadline } from '@hourglass/core'
import { currentRequest } from '../http/requestScope.js'

/**
 * The deadline admission weighs a request's waits against (a cooldown, an
 * RPM/TPM window): the call's own, ended sooner at the client SDK's own
 * timeout (the request's `answerBy`: openai-node's `x-stainless-timeout`
 * from the head, openai-python's `x-stainless-read-timeout` from the end of
 * the body, the sooner; less `replyReserveMs`) — a child of the call's
 * deadline, so the client leaving still ends a wait with its reason.
 * Undefined when there is no such timeout, or the call's deadline ends no
 * later (a non-streamed call: its deadline is that timeout already). The
 * caller disposes it once admission has settled: it bounds the wait before
 * sending, never the call.
 *
 * A stream's deadline is the ingress one (60 s by default: it runs on once
 * started), and its wait before the first token was weighed against that
 * alone: a 30 s cooldown was waited for under `timeout: 2000`, the client
 * timed out with nothing, never told when to come back. As a deadline, not
 * a `maxWaitMs` fixed when the request came, admission reads what is left of
 * it on every pass of a wait, less the time the request still needs
 * (`neededMs`): two window waits that each fitted were both taken (the
 * window found full again at its reset) and the client cut at its timeout
 * with no `Retry-After`; a wait that fitted, but not with the provider's
 * time to first token, was waited out and the request sent (and billed),
 * then cut. Refused instead: 429 with `Retry-After`, or the next provider.
 */
export function clientTimeoutBound(
  deadline: Deadline | undefined,
  replyReserveMs: number,
): Deadline | undefined {
  const answerBy = currentRequest()?.answerBy
  if (answerBy === undefined) return undefined
  const boundMs = Math.max(0, answerBy.remaining() - replyReserveMs)
  const call = deadline ?? currentDeadline()
  if (call === undefined) return Deadline.after(boundMs, { parent: answerBy })
  return call.remaining() <= boundMs ? undefined : call.child(boundMs)
}
