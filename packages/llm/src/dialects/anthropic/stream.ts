import { malformedReply, ProviderReplyError } from '../../errors/ProviderReplyError.js'
import type { FinishReason, StreamEvent } from '../../types.js'
import { mapFinish } from '../blocks.js'
import type { StreamParser } from '../Dialect.js'
import { asRecord, get, getCode, getRecord, getString, parseAnswerJson } from '../safeJson.js'
import { normalizeAnthropicStreamError } from './errors.js'
import { ANTHROPIC_FINISH, anthropicUsage } from './response.js'

/**
 * Messages streaming events → normalised events: `message_start` (id, input
 * usage), `content_block_start` (a tool call's id and name), deltas for text,
 * thinking, signature and tool input JSON, `message_delta` (stop reason,
 * output usage), `message_stop` (the one `finish`). `ping` is ignored;
 * `error` throws `ProviderReplyError`, even after text has streamed.
 */
export function createAnthropicStreamParser(): StreamParser {
  const tools = new Map<string, { id: string; name: string }>()
  let id: string | undefined
  let inputUsage: unknown
  let outputTokens: unknown
  let finishReason: FinishReason | undefined
  let finished = false
  let done = false

  const finish = (): StreamEvent[] => {
    if (finished) return []
    finished = true
    const usage = anthropicUsage(inputUsage, outputTokens)
    return [{ type: 'finish', finishReason: finishReason ?? 'unknown', usage, id }]
  }

  return {
    get done() {
      return done
    },
    parseStreamEvent(message) {
      const error = normalizeAnthropicStreamError(message)
      if (error !== undefined) throw new ProviderReplyError(error)
      const event = parseAnswerJson(message.data)
      if (asRecord(event) === undefined) throw malformedReply('Anthropic stream event')
      const type = getString(event, 'type') ?? message.event
      switch (type) {
        case 'message_start': {
          const msg = getRecord(event, 'message')
          id = getString(msg, 'id')
          inputUsage = get(msg, 'usage')
          return []
        }
        case 'content_block_start': {
          const block = getRecord(event, 'content_block')
          if (getString(block, 'type') !== 'tool_use') return []
          const tool = { id: getString(block, 'id') ?? '', name: getString(block, 'name') ?? '' }
          tools.set(getCode(event, 'index') ?? '', tool)
          return [{ type: 'tool_call', id: tool.id, name: tool.name, argumentsDelta: '' }]
        }
        case 'content_block_delta':
          return deltaEvents(getRecord(event, 'delta'), tools.get(getCode(event, 'index') ?? ''))
        case 'message_delta': {
          const reason = get(getRecord(event, 'delta'), 'stop_reason')
          if (reason !== undefined && reason !== null)
            finishReason = mapFinish(ANTHROPIC_FINISH, reason)
          const usage = getRecord(event, 'usage')
          if (usage !== undefined) {
            outputTokens = get(usage, 'output_tokens')
            // Newer API versions repeat cumulative input usage here.
            if (get(usage, 'input_tokens') !== undefined) inputUsage = usage
          }
          return []
        }
        case 'message_stop':
          done = true
          return finish()
        default:
          return []
      }
    },
    end: () => (finishReason === undefined ? [] : finish()),
  }
}

function deltaEvents(
  delta: Record<string, unknown> | undefined,
  tool: { id: string; name: string } | undefined,
): StreamEvent[] {
  switch (getString(delta, 'type')) {
    case 'text_delta':
      return [{ type: 'text', text: getString(delta, 'text') ?? '' }]
    case 'thinking_delta':
      return [{ type: 'thinking', thinking: getString(delta, 'thinking') ?? '' }]
    case 'signature_delta':
      return [{ type: 'signature', signature: getString(delta, 'signature') ?? '' }]
    case 'input_json_delta':
      return tool === undefined
        ? []
        : [
            {
              type: 'tool_call',
              id: tool.id,
              name: tool.name,
              argumentsDelta: getString(delta, 'partial_json') ?? '',
            },
          ]
    default:
      return []
  }
}
