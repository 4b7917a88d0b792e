import { bufferedInput } from './bufferedInput.js'
import { finishedInput } from './finishedInput.js'
import { frameJson } from './frameJson.js'
import { RawJson } from './RawJson.js'
import type { AnswerPlan, Frame, WireFormat } from './WireFormat.js'

const STOP_REASONS = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
} as const

/**
 * Anthropic Messages: `message_start`, then per content block
 * `content_block_start` (the first one followed by a `ping`) / `_delta`
 * (`thinking_delta`, `signature_delta`, `text_delta`, `input_json_delta`) /
 * `_stop`, then `message_delta` with the stop reason and output usage, and
 * `message_stop`.
 */
export const anthropicMessages: WireFormat = {
  toolIdPrefix: 'toolu_',
  idPrefix: 'msg_',
  streamContentType: 'text/event-stream; charset=utf-8',

  json(plan) {
    const content: unknown[] = []
    if (plan.thinkingTokens.length > 0 || plan.signature !== undefined) {
      content.push({
        type: 'thinking',
        thinking: plan.thinkingShown === false ? '' : plan.thinkingTokens.join(''),
        signature: plan.signature ?? '',
      })
    }
    if (plan.textTokens.length > 0) content.push({ type: 'text', text: plan.textTokens.join('') })
    // A call the cap cut inside its arguments is still the last block, with
    // `stop_reason: "max_tokens"`: that is how Anthropic's docs ("Handling
    // stop reasons", incomplete tool use) tell a client to spot it
    // (`response.content[-1].type == "tool_use"`). Its input can only be an
    // object: what of it was finished. The fake left the block out, and a
    // client's check for a cut call never ran against it.
    for (const call of plan.toolCalls) {
      content.push({
        type: 'tool_use',
        id: call.id,
        name: call.name,
        input: new RawJson(
          call.cut === true ? finishedInput(call.argumentsJson) : call.argumentsJson,
          "Anthropic's unstreamed tool_use `input`",
        ),
      })
    }
    return {
      id: plan.id,
      type: 'message',
      role: 'assistant',
      model: plan.model,
      content,
      ...stopReason(plan),
      usage: { ...inputUsage(plan), output_tokens: plan.outputTokens, service_tier: 'standard' },
    }
  },

  frames(plan) {
    const frames: Frame[] = [
      event('message_start', {
        type: 'message_start',
        message: {
          id: plan.id,
          type: 'message',
          role: 'assistant',
          model: plan.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...inputUsage(plan), output_tokens: 1, service_tier: 'standard' },
        },
      }),
    ]
    // The stream's own `ping` comes after the first block opens, before its
    // first delta: `message_start`, `content_block_start`, `ping`,
    // `content_block_delta`, … (docs.claude.com's streaming example; raw
    // chunks in BerriAI/litellm#5063, a tool_use block's start then the
    // ping). With no block at all, after `message_start`.
    const ping = event('ping', { type: 'ping' })
    let index = 0
    const block = (start: unknown, deltas: Frame[], endsText = false) => {
      frames.push(
        event('content_block_start', { type: 'content_block_start', index, content_block: start }),
      )
      if (index === 0) frames.push(ping)
      // One by one, not `push(...deltas)`: a spread of some 120k+ deltas (a
      // long answer) overflows the stack, and the fake dropped the connection.
      for (const d of deltas) frames.push(d)
      const stop = event('content_block_stop', { type: 'content_block_stop', index })
      frames.push(endsText ? { ...stop, endsText } : stop)
      index++
    }
    const delta = (d: unknown, token: boolean): Frame => ({
      ...event('content_block_delta', { type: 'content_block_delta', index, delta: d }),
      token,
    })
    if (plan.thinkingTokens.length > 0 || plan.signature !== undefined) {
      // Its text not asked for (`display: "omitted"`): generated, paced and
      // counted, not sent — the block opens and gets its signature alone.
      const deltas = plan.thinkingTokens.map((t) =>
        plan.thinkingShown === false
          ? { text: '', token: true }
          : delta({ type: 'thinking_delta', thinking: t }, true),
      )
      if (plan.signature !== undefined) {
        deltas.push(delta({ type: 'signature_delta', signature: plan.signature }, false))
      }
      block({ type: 'thinking', thinking: '', signature: '' }, deltas)
    }
    if (plan.textTokens.length > 0) {
      // Its `content_block_stop` ends the text: a stop sequence's tokens are
      // generated before it (`withStopTokens`). The fake closed the block at
      // once and paced them before `message_delta`, announcing the end of
      // the text a token's time early for every token of the sequence.
      block(
        { type: 'text', text: '' },
        plan.textTokens.map((t) => delta({ type: 'text_delta', text: t }, true)),
        true,
      )
    }
    for (const call of plan.toolCalls) {
      // Anthropic opens every tool_use block's input with an empty
      // `partial_json: ""` before the first piece (the streamed tool-use
      // example of docs.claude.com's streaming page, toolu_01T1x1fJ34qAmk2tNTrN7Up6;
      // Claude Code's stream-json: "the empty leading fragment … always sends
      // first"). A client that parses each piece, or takes an empty one for
      // the end of the input, fails on the real stream.
      //
      // A call without arguments streams that empty fragment and nothing
      // else: its input's text is `""`, never `{}` (raw chunks in
      // BerriAI/litellm#5063, fixed by #5091 "anthropic returning empty
      // argument string (invalid json str) for tool call while streaming").
      // Its `{}` is still generated (paced, counted), not sent, as a
      // Gemini thought not asked for is. The fake streamed `{` and `}`, and a
      // client that parsed the joined input passed against it only.
      //
      // Unless the tool streams eagerly, its input is buffered a parameter at
      // a time (`bufferedInput`): a piece that finishes none sends nothing,
      // still paced and counted.
      const sent = call.argumentsJson !== EMPTY_INPUT
      const eager = plan.streamsInputEagerly?.(call.name) ?? true
      const texts = eager ? call.pieces : bufferedInput(call.pieces, call.cut === true)
      const pieces = [delta({ type: 'input_json_delta', partial_json: '' }, false)]
      for (const p of texts) {
        pieces.push(
          sent && p !== ''
            ? delta({ type: 'input_json_delta', partial_json: p }, true)
            : { text: '', token: true },
        )
      }
      block({ type: 'tool_use', id: call.id, name: call.name, input: {} }, pieces)
    }
    if (index === 0) frames.push(ping)
    frames.push({
      // The usage here is cumulative and repeats the input counts, as the API
      // sends it today: a real captured stream ends `"usage":{"input_tokens":849,
      // "cache_creation_input_tokens":0,"cache_read_input_tokens":0,
      // "output_tokens":47}` (vercel/ai, @ai-sdk/anthropic fixture
      // `anthropic-json-tool.1.chunks.txt`; `MessageDeltaUsage` in the SDKs,
      // every input field nullable). Not just `output_tokens`.
      ...event('message_delta', {
        type: 'message_delta',
        delta: stopReason(plan),
        usage: {
          input_tokens: uncachedInput(plan),
          cache_creation_input_tokens: plan.cacheCreationInputTokens,
          cache_read_input_tokens: plan.cachedInputTokens,
          output_tokens: plan.outputTokens,
        },
      }),
      finish: true,
    })
    frames.push(event('message_stop', { type: 'message_stop' }))
    return frames
  },

  errorFrame(error) {
    return `event: error\ndata: ${frameJson(error.body)}\n\n`
  },
}

/**
 * A text ended by one of the request's `stop_sequences` says
 * `stop_reason: "stop_sequence"` and names the sequence in `stop_sequence`
 * (null otherwise), unstreamed and in the stream's `message_delta` alike.
 */
function stopReason(plan: AnswerPlan) {
  if (plan.finishReason === 'stop' && plan.stopSequence !== undefined)
    return { stop_reason: 'stop_sequence', stop_sequence: plan.stopSequence }
  return { stop_reason: STOP_REASONS[plan.finishReason], stop_sequence: null }
}

/**
 * Anthropic's input counts: `input_tokens` leaves out the cache's reads and
 * writes, reported beside it (the total is their sum), and the writes split
 * by lifetime (the fake writes 5-minute entries, the default `ephemeral`).
 */
function inputUsage(plan: AnswerPlan) {
  return {
    input_tokens: uncachedInput(plan),
    cache_creation_input_tokens: plan.cacheCreationInputTokens,
    cache_read_input_tokens: plan.cachedInputTokens,
    cache_creation: {
      ephemeral_5m_input_tokens: plan.cacheCreationInputTokens,
      ephemeral_1h_input_tokens: 0,
    },
  }
}

function uncachedInput(plan: AnswerPlan): number {
  return plan.inputTokens - plan.cachedInputTokens - plan.cacheCreationInputTokens
}

/** The input of a call without arguments (`arguments: {}`, or none). */
const EMPTY_INPUT = '{}'

function event(name: string, data: unknown): Frame {
  return { text: `event: ${name}\ndata: ${JSON.stringify(data)}\n\n` }
}
