import { malformedReply } from '../../errors/ProviderReplyError.js'
import type { ChatResponse, ContentBlock, FinishReason } from '../../types.js'
import { mapFinish, parseArguments, textOf, usageOf } from '../blocks.js'
import type { ResponseMeta } from '../Dialect.js'
import { EMPTY_ARGUMENTS, isEmptyArguments } from '../emptyToolArguments.js'
import { headerValue } from '../errorHeaders.js'
import { asArray, get, getRecord, getString, parseAnswerJson } from '../safeJson.js'

export const OPENAI_FINISH: Readonly<Record<string, FinishReason>> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  content_filter: 'content_filter',
  // DeepSeek: generation cut short because the provider ran out of capacity.
  insufficient_system_resource: 'error',
}

/**
 * `chat.completion` body → normalised response. `reasoning_content`
 * (DeepSeek, Qwen) becomes a thinking block without a signature. A body
 * without choices is not an empty answer: it throws `ProviderReplyError`.
 */
export function parseOpenAIResponse(
  body: unknown,
  meta: ResponseMeta = {},
  provider = 'openai',
): ChatResponse {
  const json = typeof body === 'string' ? parseAnswerJson(body) : body
  const choice = asArray(get(json, 'choices'))[0]
  const message = getRecord(choice, 'message')
  if (message === undefined) throw malformedReply('chat completion (no choices[0].message)')
  const content: ContentBlock[] = []
  const reasoning = getString(message, 'reasoning_content')
  if (reasoning) content.push({ type: 'thinking', thinking: reasoning })
  const text = getString(message, 'content') ?? getString(message, 'refusal')
  if (text) content.push({ type: 'text', text })
  for (const call of asArray(get(message, 'tool_calls'))) {
    const fn = getRecord(call, 'function')
    // A call without arguments (no `arguments`, or blank: some
    // OpenAI-compatible servers for a parameterless tool) is `{}`, as the
    // stream gives it and as client code parses it.
    const given = getString(fn, 'arguments') ?? ''
    const rawArguments = isEmptyArguments(given) ? EMPTY_ARGUMENTS : given
    content.push({
      type: 'tool_call',
      id: getString(call, 'id') ?? '',
      name: getString(fn, 'name') ?? '',
      arguments: parseArguments(rawArguments),
      // Kept as sent, for whoever passes the call on as text (the gateway's
      // answer, the next turn's request): the parsed value rounds integers
      // past 2^53.
      rawArguments,
    })
  }
  const usage = getRecord(json, 'usage')
  const requestId = headerValue(meta.headers, 'x-request-id')
  return {
    id: getString(json, 'id') ?? '',
    model: getString(json, 'model') ?? '',
    provider,
    content,
    text: textOf(content),
    finishReason: mapFinish(OPENAI_FINISH, get(choice, 'finish_reason')),
    usage: usageOf(get(usage, 'prompt_tokens'), get(usage, 'completion_tokens')),
    ...(requestId === undefined ? {} : { providerRequestId: requestId }),
  }
}
