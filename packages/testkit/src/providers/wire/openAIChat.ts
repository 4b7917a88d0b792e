import type { AnswerPlan, Frame, WireFormat } from './WireFormat.js'

/**
 * OpenAI chat completions, as OpenAI and the compatible providers (DeepSeek,
 * Qwen compatible mode, Doubao/Ark, Qianfan v2) send it. Reasoning goes out
 * as `reasoning_content` (DeepSeek's and Qwen's field). Usage arrives in a
 * final chunk with empty `choices` when `stream_options.include_usage` is set
 * (OpenAI), and on the finishing chunk for every other dialect (DeepSeek
 * style).
 */
export const openAIChat: WireFormat = {
  toolIdPrefix: 'call_',
  idPrefix: 'chatcmpl-',
  streamContentType: 'text/event-stream; charset=utf-8',

  json(plan) {
    const text = plan.textTokens.join('')
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: text === '' && plan.toolCalls.length > 0 ? null : text,
      refusal: null,
    }
    if (plan.thinkingTokens.length > 0) message['reasoning_content'] = plan.thinkingTokens.join('')
    if (plan.toolCalls.length > 0) {
      message['tool_calls'] = plan.toolCalls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.argumentsJson },
      }))
    }
    return {
      id: plan.id,
      object: 'chat.completion',
      created: plan.created,
      model: plan.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: plan.finishReason }],
      usage: usage(plan),
      system_fingerprint: 'fp_hourglass_fake',
    }
  },

  frames(plan) {
    const chunk = (delta: unknown, finish: string | null = null, extra: object = {}): string =>
      `data: ${JSON.stringify({
        id: plan.id,
        object: 'chat.completion.chunk',
        created: plan.created,
        model: plan.model,
        system_fingerprint: 'fp_hourglass_fake',
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        ...extra,
      })}\n\n`
    const frames: Frame[] = [{ text: chunk({ role: 'assistant', content: '' }) }]
    for (const t of plan.thinkingTokens)
      frames.push({ text: chunk({ reasoning_content: t }), token: true })
    for (const t of plan.textTokens) frames.push({ text: chunk({ content: t }), token: true })
    plan.toolCalls.forEach((call, index) => {
      frames.push({
        text: chunk({
          tool_calls: [
            { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
          ],
        }),
      })
      for (const piece of call.pieces) {
        frames.push({
          text: chunk({ tool_calls: [{ index, function: { arguments: piece } }] }),
          token: true,
        })
      }
    })
    const usageOnFinish = plan.dialect !== 'openai' ? { usage: usage(plan) } : {}
    frames.push({ text: chunk({}, plan.finishReason, usageOnFinish) })
    if (plan.dialect === 'openai' && plan.includeUsage) {
      frames.push({
        text: `data: ${JSON.stringify({
          id: plan.id,
          object: 'chat.completion.chunk',
          created: plan.created,
          model: plan.model,
          system_fingerprint: 'fp_hourglass_fake',
          choices: [],
          usage: usage(plan),
        })}\n\n`,
      })
    }
    frames.push({ text: 'data: [DONE]\n\n' })
    return frames
  },

  errorFrame(error, plan) {
    if (plan.dialect === 'qwen') {
      // DashScope's own SSE framing: no space after the colons, and the
      // status the error stands for rides along as a comment line.
      return `id:${plan.textTokens.length + 1}\nevent:error\n:HTTP_STATUS/${error.status ?? 500}\ndata:${JSON.stringify(error.body)}\n\n`
    }
    return `data: ${JSON.stringify(error.body)}\n\n`
  },
}

function usage(plan: AnswerPlan) {
  return {
    prompt_tokens: plan.inputTokens,
    completion_tokens: plan.outputTokens,
    total_tokens: plan.inputTokens + plan.outputTokens,
  }
}
