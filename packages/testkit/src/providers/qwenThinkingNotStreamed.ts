import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

/**
 * The open-weight hybrid Qwen3 models (the 2504 release) on Model Studio,
 * which think unless `enable_thinking: false` — and think only in a stream.
 * Not their `-instruct-2507` / `-thinking-2507` successors, nor the
 * commercial models (qwen-plus, qwen3-max, …): those answer a
 * non-streamed request (reported for the 2507 and qwen3.5 open-weight
 * models), and whether a commercial model refuses `enable_thinking: true`
 * without a stream is not documented model by model, so the fake takes it.
 */
const HYBRID_OPEN_WEIGHT = /^qwen3-(0\.6b|1\.7b|4b|8b|14b|32b|30b-a3b|235b-a22b)$/

/** QwQ on Model Studio: a thinking-only model served as a stream only. */
const STREAM_ONLY = /^qwq-(32b|plus(-latest|-\d{4}-\d{2}-\d{2})?)$/

/** The request id the fake's DashScope errors carry, as its other Qwen errors do. */
const REQUEST_ID = 'b0a0d2c4-fake-9c1e-hourglass'

/**
 * DashScope's 400 (compatible mode) for a non-streamed request to a model
 * that thinks only in a stream; undefined for any other request. The fake
 * answered 200, so a client that called qwen3-32b without `stream: true`
 * or `enable_thinking: false` passed its tests and had every call refused:
 * - open-weight hybrid Qwen3 (qwen3-32b, qwen3-235b-a22b, …), thinking by
 *   default or given `enable_thinking: true`: "parameter.enable_thinking
 *   must be set to false for non-streaming calls" (Model Studio's error
 *   codes, 400 InvalidParameter: "a thinking-mode model called without
 *   streaming"; the compatible-mode body as quoted in
 *   infiniflow/ragflow#8972, OpenBMB/UltraRAG#287 for qwen3-32b).
 *   Only the top-level `enable_thinking: false` turns it off: vLLM's
 *   `chat_template_kwargs` does nothing on DashScope (cloudwego/eino-ext#315).
 * - QwQ (qwq-plus, qwq-32b), whatever `enable_thinking` says: "This model
 *   only support stream mode, please enable the stream parameter to access
 *   the model. " — its trailing space included (infiniflow/ragflow#5912,
 *   FoundationAgents/OpenManus#216, QuantumNous/new-api#905).
 */
export function qwenThinkingNotStreamed(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
  stream: boolean,
): ErrorReply | undefined {
  if (dialect !== 'qwen' || route !== 'openai-chat' || stream) return undefined
  if (typeof body !== 'object' || body === null) return undefined
  const json = body as Record<string, unknown>
  const model = json['model']
  if (typeof model !== 'string') return undefined
  if (STREAM_ONLY.test(model)) {
    return refusal(
      'This model only support stream mode, please enable the stream parameter to access the model. ',
    )
  }
  if (HYBRID_OPEN_WEIGHT.test(model) && json['enable_thinking'] !== false) {
    return refusal('parameter.enable_thinking must be set to false for non-streaming calls')
  }
  return undefined
}

function refusal(message: string): ErrorReply {
  return {
    kind: 'error',
    status: 400,
    body: {
      error: {
        code: 'invalid_parameter_error',
        param: null,
        message,
        type: 'invalid_request_error',
      },
      id: `chatcmpl-${REQUEST_ID}`,
      request_id: REQUEST_ID,
    },
    headers: {},
  }
}
