import { malformedReply, ProviderReplyError } from '../../errors/ProviderReplyError.js'
import type { FinishReason, StreamEvent } from '../../types.js'
import { countOf, mapFinish } from '../blocks.js'
import type { StreamParser } from '../Dialect.js'
import { EMPTY_ARGUMENTS, isEmptyArguments } from '../emptyToolArguments.js'
import { isBlank } from '../isBlank.js'
import { rawJsonValues } from '../rawJsonValues.js'
import { asRecord, get, getCode, getRecord, getString, parseAnswerJson } from '../safeJson.js'
import { markUnfinished } from '../unfinishedCall.js'
import { normalizeAnthropicStreamError } from './errors.js'
import {
  ANTHROPIC_FINISH,
  ANTHROPIC_WINDOW_FULL,
  anthropicServiceTier,
  anthropicUsage,
  anthropicUsageReported,
} from './response.js'

/**
 * Messages streaming events → normalised events: `message_start` (id, input
 * usage, the service tier), `content_block_start` (a tool call's id and
 * name), deltas for text, thinking, signature and tool input JSON, `message_delta` (stop reason,
 * output usage), `message_stop` (the one `finish`). `ping` is ignored;
 * `error` throws `ProviderReplyError`, even after text has streamed. A
 * tool call without arguments streams `partial_json: ""` (or no delta): at
 * its `content_block_stop` it gets `{}`, as its whole answer's `input` is —
 * or the `input` its `content_block_start` gave, when a compatible server
 * put it there (as a block's opening text or thinking is kept).
 * Each tool call's events carry its `index` among the answer's calls.
 */
export function createAnthropicStreamParser(): StreamParser {
  /** Each tool_use block being streamed, by its block `index`. */
  const tools = new Map<string, StreamedTool>()
  /** Each text or thinking block a compatible server opened with content, by its block `index`. */
  const opened = new Map<string, OpenedBlock>()
  /** The last block started's `index`. */
  let lastIndex = ''
  /** The tool calls opened so far: the next one's `StreamEvent` `index`. */
  let toolCount = 0
  let id: string | undefined
  /** `message_start`'s `message.model`: the model answering. */
  let model: string | undefined
  /** The input counts so far: `message_start`'s, updated by `message_delta`. */
  let inputUsage: Record<string, unknown> = {}
  let outputTokens: unknown
  /** `message_start`'s `usage.service_tier`: the tier serving the answer. */
  let serviceTier: string | undefined
  let finishReason: FinishReason | undefined
  /** The context window filled (`ANTHROPIC_WINDOW_FULL`): the finish carries it as `providerFinishReason`. */
  let windowFull = false
  /** Text, thinking or a tool call came: `message_stop` then ends an answer. */
  let sawContent = false
  /** The last content block started was a `tool_use`. */
  let lastIsTool = false
  let finished = false
  let done = false

  const finish = (): StreamEvent[] => {
    if (finished) return []
    finished = true
    // None when neither `message_start` nor `message_delta` had a count:
    // zeros would read as a report of none used.
    const usage = anthropicUsageReported(inputUsage, outputTokens)
      ? anthropicUsage(inputUsage, outputTokens)
      : undefined
    const out: StreamEvent[] = []
    // The last block's start signature, when the stream never stopped it.
    out.push(...closeOpened(opened, lastIndex))
    // A tool block the stream never stopped still gets its `{}`.
    for (const tool of tools.values()) out.push(...closeTool(tool))
    const event: StreamEvent = {
      type: 'finish',
      finishReason: finishReason ?? 'unknown',
      ...(windowFull ? { providerFinishReason: ANTHROPIC_WINDOW_FULL } : {}),
      usage,
      id,
      ...(model === undefined ? {} : { model }),
      ...(serviceTier === undefined ? {} : { serviceTier }),
    }
    // Stopped at its token limit on a `tool_use`: that call is incomplete
    // whatever its input reads (`{}` closed by its `content_block_stop`),
    // as the whole answer's is (`parseAnthropicResponse`): the collector
    // marks the answer's last call (`markUnfinished`).
    out.push(lastIsTool && finishReason === 'length' ? markUnfinished(event) : event)
    return out
  }

  return {
    get done() {
      return done
    },
    // `message_delta` gave the stop reason; `message_stop` is still to come.
    get finishing() {
      return finishReason !== undefined && !finished
    },
    parseStreamEvent(message) {
      const error = normalizeAnthropicStreamError(message)
      if (error !== undefined) throw new ProviderReplyError(error)
      // `data:` with nothing after it (a proxy's keep-alive) is an event with
      // empty data, as SSE dispatches it: no chunk, not an unreadable one.
      if (isBlank(message.data)) return []
      const event = parseAnswerJson(message.data)
      if (asRecord(event) === undefined) throw malformedReply('Anthropic stream event')
      const type = getString(event, 'type') ?? message.event
      switch (type) {
        case 'message_start': {
          const msg = getRecord(event, 'message')
          id = getString(msg, 'id')
          model = getString(msg, 'model') || undefined
          inputUsage = { ...getRecord(msg, 'usage') }
          serviceTier = anthropicServiceTier(inputUsage)
          return []
        }
        case 'content_block_start': {
          const block = getRecord(event, 'content_block')
          const blockType = getString(block, 'type')
          lastIsTool = blockType === 'tool_use'
          lastIndex = getCode(event, 'index') ?? ''
          // Encrypted reasoning comes whole, in its start: kept as a whole
          // answer keeps it, or the next turn's tool_use lacks the reasoning
          // before it (Anthropic refuses that history while thinking is on).
          // Content, as thinking in the clear is: a first token (`StreamCollector`),
          // so `message_stop` after it ends an answer, with its finish.
          if (blockType === 'redacted_thinking') {
            const data = getString(block, 'data')
            if (!data) return []
            sawContent = true
            return [{ type: 'signature', signature: data, redacted: true }]
          }
          // A block's start is its first piece, not only its type: Anthropic
          // opens each one empty, but an Anthropic-compatible server
          // (LiteLLM's, a translator in front of another model) may open it
          // with text, thinking or a signature — which Anthropic's SDK
          // (MessageStream) keeps as the block's beginning. Dropped, the
          // answer lost its opening words, or all of them.
          if (blockType === 'text' || blockType === 'thinking') {
            const start = openBlock(block, blockType)
            if (start.echo === undefined && start.signature === undefined) return []
            opened.set(lastIndex, start)
            if (start.echo === undefined) return []
            sawContent = true
            return [
              blockType === 'text'
                ? { type: 'text', text: start.echo }
                : { type: 'thinking', thinking: start.echo },
            ]
          }
          if (blockType !== 'tool_use') return []
          const tool: StreamedTool = {
            id: getString(block, 'id') ?? '',
            name: getString(block, 'name') ?? '',
            // The call's position among the answer's calls: two blocks with
            // one id (an Anthropic-compatible server's, or none) are two
            // calls, not one whose arguments are both joined.
            index: toolCount++,
            hasArguments: false,
            startInput: startInput(block, message.data),
          }
          tools.set(getCode(event, 'index') ?? '', tool)
          sawContent = true
          return [toolEvent(tool, '')]
        }
        case 'content_block_delta': {
          const index = getCode(event, 'index') ?? ''
          const delta = getRecord(event, 'delta')
          if (isEcho(opened.get(index), delta)) return []
          const out = deltaEvents(delta, tools.get(index))
          if (!sawContent && out.some(isContent)) sawContent = true
          return out
        }
        case 'content_block_stop': {
          const index = getCode(event, 'index') ?? ''
          const tool = tools.get(index)
          return tool === undefined ? closeOpened(opened, index) : closeTool(tool)
        }
        case 'message_delta': {
          const reason = get(getRecord(event, 'delta'), 'stop_reason')
          if (reason !== undefined && reason !== null) {
            finishReason = mapFinish(ANTHROPIC_FINISH, reason)
            windowFull = reason === ANTHROPIC_WINDOW_FULL
          }
          const usage = getRecord(event, 'usage')
          if (usage !== undefined) {
            const output = get(usage, 'output_tokens')
            if (output !== undefined && output !== null) outputTokens = output
            // The API repeats the cumulative input counts here (input, cache
            // writes, cache reads), each of them nullable
            // (`MessageDeltaUsage`). Merged field by field, a null or absent
            // one keeping what `message_start` said, as the SDK's
            // MessageStream does (anthropic-sdk-typescript
            // src/lib/MessageStream.ts, `message_delta`): replacing the whole
            // record billed a delta of `input_tokens: null` as 0 input tokens
            // and dropped the cache counts of one without them.
            for (const field of INPUT_USAGE_FIELDS) {
              const value = get(usage, field)
              if (value !== undefined && value !== null) inputUsage[field] = value
            }
          }
          return []
        }
        case 'message_stop':
          done = true
          // No stop reason and no content (`message_start` then
          // `message_stop`): no answer, no finish — left for the caller to
          // refuse, as OpenAI's `[DONE]` alone is. It was an empty success.
          if (finishReason === undefined && !sawContent) return []
          return finish()
        default:
          return []
      }
    },
    end: () => (finishReason === undefined ? [] : finish()),
    // The input side is known from `message_start` on (billed from then,
    // whatever follows); `output_tokens` so far is a lower bound.
    get usageSoFar() {
      return anthropicInputReported(inputUsage)
        ? anthropicUsage(inputUsage, outputTokens)
        : undefined
    },
    get responseId() {
      return id || undefined
    },
    get serviceTier() {
      return serviceTier
    },
  }
}

/** Text or thinking that says something: an empty delta (`text_delta` of "") is none. */
function isContent(event: StreamEvent): boolean {
  return (
    (event.type === 'text' && event.text !== '') ||
    (event.type === 'thinking' && event.thinking !== '')
  )
}

/** Whether `usage` has an input count (`message_start`'s, or a `message_delta`'s). */
function anthropicInputReported(usage: Record<string, unknown>): boolean {
  return INPUT_USAGE_FIELDS.some((field) => (countOf(usage[field]) ?? 0) > 0)
}

/** The cumulative input counts a `message_delta` may repeat (`anthropicUsage` sums them). */
const INPUT_USAGE_FIELDS = [
  'input_tokens',
  'cache_creation_input_tokens',
  'cache_read_input_tokens',
] as const

/** A tool_use block being streamed; `hasArguments` once argument text (or its `{}`) came. */
interface StreamedTool {
  id: string
  name: string
  /** Its `StreamEvent` `index`: 0 for the answer's first tool_use block, 1 for the next, … */
  index: number
  hasArguments: boolean
  /** The `input` its start gave, as written, when not `{}` (`startInput`). */
  startInput?: string | undefined
}

/**
 * A text or thinking block a compatible server opened with content
 * (Anthropic's open empty). LiteLLM's /v1/messages sends the block's first
 * piece in its start AND again as its first delta (older versions in the
 * start only): `echo` is that piece until the first delta came, which is
 * dropped when it is the same — else "Let me" + "Let me" + " think." read
 * "Let meLet me think.". `signature` is the start's, sent at the block's
 * stop unless a `signature_delta` came: Anthropic's SDK (MessageStream)
 * replaces the signature with the delta's; both sent made a second, empty
 * thinking block signed with it.
 */
interface OpenedBlock {
  echo: string | undefined
  signature: string | undefined
}

function openBlock(
  block: Record<string, unknown> | undefined,
  blockType: 'text' | 'thinking',
): OpenedBlock {
  return {
    echo: getString(block, blockType) || undefined,
    signature: (blockType === 'thinking' && getString(block, 'signature')) || undefined,
  }
}

/** Whether `delta` is the block's first piece repeating its start's (and forgets the start's signature on a `signature_delta`). */
function isEcho(
  block: OpenedBlock | undefined,
  delta: Record<string, unknown> | undefined,
): boolean {
  if (block === undefined) return false
  const type = getString(delta, 'type')
  if (type === 'signature_delta') block.signature = undefined
  if (type !== 'text_delta' && type !== 'thinking_delta') return false
  const echo = block.echo
  block.echo = undefined
  return (
    echo !== undefined && getString(delta, type === 'text_delta' ? 'text' : 'thinking') === echo
  )
}

/** The start's signature of block `index` when no `signature_delta` replaced it; the block is done. */
function closeOpened(opened: Map<string, OpenedBlock>, index: string): StreamEvent[] {
  const block = opened.get(index)
  opened.delete(index)
  return block?.signature === undefined ? [] : [{ type: 'signature', signature: block.signature }]
}

/**
 * A tool_use start's `input` when it is not `{}` — Anthropic's always is,
 * its input coming as `input_json_delta` pieces; a compatible server may
 * give it whole here, with no piece after it. Anthropic's SDK keeps it
 * unless pieces come (they replace it): so does the parser, sending it at
 * the block's end where no argument text came, instead of `{}` — a call
 * run with no arguments. As written in the event (`rawJsonValues`): an
 * integer past 2^53 keeps its digits.
 */
function startInput(block: Record<string, unknown> | undefined, data: string): string | undefined {
  const input = getRecord(block, 'input')
  if (input === undefined || Object.keys(input).length === 0) return undefined
  return rawJsonValues(data, ['content_block', 'input'])[0]?.text
}

function toolEvent(tool: StreamedTool, argumentsDelta: string): StreamEvent {
  return { type: 'tool_call', id: tool.id, name: tool.name, argumentsDelta, index: tool.index }
}

/**
 * The `{}` of a tool call that ends with no argument text; nothing for one
 * that had some. Marked as the parser's (`markUnfinished`), as OpenAI's
 * (`withEmptyArgumentsAsObject`): a call cut by `max_tokens` before any of
 * its input came reads the same, and a stream re-encoded as it comes (the
 * gateway's) sent it as `"{}"`, a client then running `send_email({})`.
 */
function closeTool(tool: StreamedTool): StreamEvent[] {
  if (tool.hasArguments) return []
  tool.hasArguments = true
  // The input its start gave is the model's whole input: not the parser's `{}`.
  if (tool.startInput !== undefined) return [toolEvent(tool, tool.startInput)]
  return [markUnfinished(toolEvent(tool, EMPTY_ARGUMENTS))]
}

function deltaEvents(
  delta: Record<string, unknown> | undefined,
  tool: StreamedTool | undefined,
): StreamEvent[] {
  switch (getString(delta, 'type')) {
    case 'text_delta':
      return [{ type: 'text', text: getString(delta, 'text') ?? '' }]
    case 'thinking_delta':
      return [{ type: 'thinking', thinking: getString(delta, 'thinking') ?? '' }]
    case 'signature_delta':
      return [{ type: 'signature', signature: getString(delta, 'signature') ?? '' }]
    case 'input_json_delta': {
      if (tool === undefined) return []
      const argumentsDelta = getString(delta, 'partial_json') ?? ''
      if (!isEmptyArguments(argumentsDelta)) tool.hasArguments = true
      return [toolEvent(tool, argumentsDelta)]
    }
    default:
      return []
  }
}
