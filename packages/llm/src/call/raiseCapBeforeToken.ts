import type { ChatRequest, ChatResponse, StreamEvent } from '../types.js'
import type { StreamSink } from './ModelStream.js'
import {
  type Answered,
  endsWithWhatWasProduced,
  type OutputLimitOptions,
  refusesRaisedCap,
  sumUsage,
  WINDOW_FULL,
} from './recoverOutputLimit.js'

/**
 * A streamed call whose answer stopped at its output cap before any token
 * reached the consumer — a reasoning model (OpenAI's o-series and GPT-5,
 * Gemini 2.5 and 3) that spent the whole `maxTokens` thinking, unseen — is
 * asked once more with the cap raised (×2, up to
 * `recovery.maxTokensCeiling`), as a call not streamed is: the consumer had
 * read nothing, so nothing is restarted. It got an empty answer with
 * `finishReason: 'length'`, where the same request not streamed answered.
 * The answer replaced was billed: its usage is added to the raised answer's
 * (its `finish` event's and `result`'s), as a call not streamed adds it.
 * The raised step failing with nothing delivered (the model refuses the
 * cap, the cost budget cannot afford it) leaves the first answer as it came;
 * the deadline's end and the caller's stop pass through, as at every step.
 * `complete(request, sink, step)` runs one full call, writing to `sink`.
 */
export async function raiseCapBeforeToken(
  sink: StreamSink,
  request: ChatRequest,
  options: OutputLimitOptions,
  complete: (request: ChatRequest, sink: StreamSink, step?: string) => Promise<Answered>,
): Promise<ChatResponse> {
  const first = heldUntilToken(sink)
  let answered: Answered
  try {
    answered = await complete(request, first)
  } catch (error) {
    first.release()
    throw error
  }
  const { response } = answered
  const ceiling = options.maxTokensCeiling ?? 2 * answered.request.maxTokens
  const reason = response.providerFinishReason
  if (
    response.finishReason !== 'length' ||
    first.tokenCame ||
    (reason !== undefined && WINDOW_FULL.has(reason)) ||
    (options.maxRecoveries ?? 3) === 0 ||
    ceiling <= answered.request.maxTokens ||
    sink.signal.aborted
  ) {
    first.release()
    return response
  }
  const raised = {
    ...answered.request,
    maxTokens: Math.min(answered.request.maxTokens * 2, ceiling),
  }
  const again = withUsageOf(response, sink)
  try {
    const answer = (await complete(raised, again, '1:raise-cap')).response
    return withUsage(answer, response)
  } catch (error) {
    // Refused with nothing delivered, as the step of a call not streamed
    // keeps what it produced (recoverOutputLimit's rules: the raised cap
    // refused, the budget, admission, every model failing, a refusal of the
    // request): the answer that came stands, as it was. Anything else — the
    // deadline's end or cancel (a client that left), the caller's stop, a
    // content policy's refusal — ends the call as it is: kept, a cancelled
    // deadline's call answered its empty cut answer.
    if (
      again.delivered() ||
      sink.signal.aborted ||
      !(refusesRaisedCap(error) || endsWithWhatWasProduced(error))
    ) {
      throw error
    }
    first.release()
    return response
  }
}

/** A sink that holds what it is given until a token comes (then passes all on), or `release()`. */
function heldUntilToken(sink: StreamSink): StreamSink & {
  readonly tokenCame: boolean
  release(): void
} {
  const held: StreamEvent[] = []
  let tokenCame = false
  const release = () => {
    for (const event of held.splice(0)) sink.push(event)
  }
  return {
    get tokenCame() {
      return tokenCame
    },
    push(event) {
      if (!tokenCame && isToken(event)) {
        tokenCame = true
        release()
      }
      if (tokenCame) sink.push(event)
      else held.push(event)
    },
    release,
    behind: () => sink.behind(),
    signal: sink.signal,
    stoppedAfterFinish: (reason) => sink.stoppedAfterFinish(reason),
    leftLoop: (reason) => sink.leftLoop(reason),
  }
}

/** A sink passing events on, the `finish`'s usage with `replaced`'s added (it was billed too). */
function withUsageOf(
  replaced: ChatResponse,
  sink: StreamSink,
): StreamSink & { delivered(): boolean } {
  let delivered = false
  return {
    delivered: () => delivered,
    push(event) {
      delivered = true
      // As `withUsage` adds it to the result: with the raised answer's own
      // when it reported one, alone (a lower bound) when it did not.
      if (event.type === 'finish' && replaced.usageReported !== false) {
        const usage =
          event.usage === undefined ? replaced.usage : sumUsage([replaced.usage, event.usage])
        sink.push({ ...event, usage })
      } else sink.push(event)
    },
    behind: () => sink.behind(),
    signal: sink.signal,
    stoppedAfterFinish: (reason) => sink.stoppedAfterFinish(reason),
    leftLoop: (reason) => sink.leftLoop(reason),
  }
}

/**
 * `answer` with `replaced`'s usage added, when that came: a count then,
 * whether or not the raised answer reported its own (a lower bound).
 */
function withUsage(answer: ChatResponse, replaced: ChatResponse): ChatResponse {
  if (replaced.usageReported === false) return answer
  const { usageReported: _unreported, ...rest } = answer
  return { ...rest, usage: sumUsage([replaced.usage, answer.usage]) }
}

/** Text, thinking or a tool call: what the consumer is shown (as `StreamCollector.sawToken`). */
function isToken(event: StreamEvent): boolean {
  return event.type === 'text' || event.type === 'thinking' || event.type === 'tool_call'
}
