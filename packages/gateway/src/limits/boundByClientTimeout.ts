import { currentRequest } from '../http/requestScope.js'
import type { Admission } from '../llm.js'

type AcquireRequest = Parameters<Admission['acquire']>[0]

/**
 * An admission request whose waits (a cooldown, an RPM/TPM window) are
 * worth taking only while they end before the client SDK's own timeout
 * (`x-stainless-timeout`, the request's `answerBy`, less `replyReserveMs`):
 * a longer one is refused at once — 429 with `Retry-After`, or the next
 * provider of the list — as a wait past the deadline is. A non-streamed
 * call's deadline is that timeout already; a stream's is the ingress one
 * (60 s by default: it runs on once started), and its wait before the
 * first token was weighed against that alone. A 30 s cooldown was waited
 * for under `timeout: 2000`: the client timed out with nothing, never told
 * when to come back, and the SDK's retries met the same wait.
 */
export function boundByClientTimeout(
  request: AcquireRequest,
  replyReserveMs: number,
): AcquireRequest {
  const answerBy = currentRequest()?.answerBy
  if (answerBy === undefined) return request
  const boundMs = Math.max(0, answerBy.remaining() - replyReserveMs)
  const within = (ms: number | undefined) => Math.min(ms ?? Number.POSITIVE_INFINITY, boundMs)
  const { reweigh } = request
  // A copy: the caller's object is its own. `reweigh`'s answer replaces
  // `maxWaitMs` (a fallback weighed again): bounded as well.
  return Object.assign({}, request, {
    maxWaitMs: within(request.maxWaitMs),
    reweigh:
      reweigh === undefined
        ? undefined
        : () => {
            const again = reweigh()
            return { maxWaitMs: within(again.maxWaitMs), hasFallback: again.hasFallback }
          },
  })
}
