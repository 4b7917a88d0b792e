import { frameJson } from './frameJson.js'
import type { AnswerPlan, Frame, WireFormat } from './WireFormat.js'

const FINISH = {
  stop: 'normal',
  length: 'length',
  tool_calls: 'function_call',
  content_filter: 'content_filter',
} as const

/**
 * Baidu ERNIE's legacy wenxinworkshop chat API
 * (`/rpc/2.0/ai_custom/v1/wenxinworkshop/chat/{model}`): the answer is in
 * `result`, streamed as `data:` chunks with `sentence_id` and `is_end`.
 * Its errors come back as HTTP 200 with `error_code` — see `ernieErrors`.
 */
export const ernieChat: WireFormat = {
  toolIdPrefix: 'fc_',
  idPrefix: 'as-',
  streamContentType: 'text/event-stream;charset=utf-8',

  json(plan) {
    return {
      ...base(plan),
      result: plan.textTokens.join(''),
      is_truncated: plan.finishReason === 'length',
      need_clear_history: false,
      finish_reason: FINISH[plan.finishReason],
      usage: usage(plan),
    }
  },

  frames(plan) {
    // The text, then a chunk of its own that ends the stream: `is_end:
    // true`, `result: ""`, the finish reason and the whole usage, as the
    // real stream ends (`"sentence_id":3,"is_end":true,"is_truncated":false,
    // "result":"","need_clear_history":false,"finish_reason":"normal"` after
    // the last sentence, an ernie-bot-8k stream logged by erniebot4j;
    // alibaba/higress's Baidu provider quotes the same end event). The fake
    // sent the last text in the end chunk, so a stop sequence's tokens,
    // generated before the end, held the last text back a token's time each.
    const chunk = (i: number, result: string, end: boolean): Frame => ({
      text: `data: ${JSON.stringify({
        ...base(plan),
        sentence_id: i,
        is_end: end,
        // Baidu lists it among every answer's fields, streamed or not: the
        // last chunk, which carries the finish reason, says whether the cap
        // cut the answer, as the unstreamed answer does (it said `false`
        // whatever the cut). The chunks before it were not cut.
        is_truncated: end && plan.finishReason === 'length',
        result,
        need_clear_history: false,
        finish_reason: end ? FINISH[plan.finishReason] : 'normal',
        usage: usage(plan),
      })}\n\n`,
      token: !end,
      finish: end,
    })
    const frames = plan.textTokens.map((t, i) => chunk(i, t, false))
    frames.push(chunk(frames.length, '', true))
    return frames
  },

  errorFrame(error) {
    return `data: ${frameJson(error.body)}\n\n`
  },
}

function base(plan: AnswerPlan) {
  return { id: plan.id, object: 'chat.completion', created: plan.created }
}

function usage(plan: AnswerPlan) {
  return {
    prompt_tokens: plan.inputTokens,
    completion_tokens: plan.outputTokens,
    total_tokens: plan.inputTokens + plan.outputTokens,
  }
}
