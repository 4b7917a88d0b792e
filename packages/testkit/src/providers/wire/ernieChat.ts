import { frameJson } from './frameJson.js'
import type { AnswerPlan, Frame, WireFormat } from './WireFormat.js'

const FINISH = {
  stop: 'normal',
  length: 'length',
  tool_calls: 'function_call',
  content_filter: 'content_filter',
} as const

/**
 * Baidu's finish reasons: `normal` — "输出内容完全由大模型生成，未触发截断、替换"
 * (the model finished on its own); `stop` — "输出结果命中入参stop中指定的字段后被截断"
 * (cut where it met one of the request's `stop` sequences); `length`,
 * `content_filter`, `function_call`. A text a stop sequence ended is `stop`.
 */
function finishReason(plan: AnswerPlan) {
  return plan.finishReason === 'stop' && plan.stopSequence !== undefined
    ? 'stop'
    : FINISH[plan.finishReason]
}

/**
 * The model's function call, as the legacy API returns it beside `result`:
 * `function_call: {name, arguments}` — `arguments` a JSON string — with
 * `finish_reason: "function_call"` (Baidu's response table: "function_call
 * — 由模型生成的函数调用，包含函数名称，和调用参数"). The API takes one call per
 * answer: the first scripted one.
 */
function functionCall(plan: AnswerPlan) {
  const call = plan.toolCalls[0]
  return call === undefined
    ? {}
    : { function_call: { name: call.name, arguments: call.argumentsJson } }
}

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
      finish_reason: finishReason(plan),
      ...functionCall(plan),
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
        finish_reason: end ? finishReason(plan) : 'normal',
        ...(end ? functionCall(plan) : {}),
        usage: usage(plan),
      })}\n\n`,
      token: !end,
      finish: end,
    })
    const frames = plan.textTokens.map((t, i) => chunk(i, t, false))
    const sentences = frames.length
    // The call comes whole on the end chunk: its arguments are generated
    // (paced, counted) but not streamed.
    for (const call of plan.toolCalls.slice(0, 1))
      for (const _ of call.pieces) frames.push({ text: '', token: true })
    frames.push(chunk(sentences, '', true))
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
