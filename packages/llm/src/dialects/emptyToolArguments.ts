import type { StreamEvent } from '../types.js'
import type { StreamParser } from './Dialect.js'
import { markUnfinished } from './unfinishedCall.js'

/**
 * The arguments of a tool call that has none: the empty JSON object, as a
 * whole answer gives them (Anthropic's `input: {}`, Gemini's `args`, an
 * OpenAI-compatible server's blank `arguments` read as `{}`). Streamed, such
 * a call's argument deltas add up to "" (Anthropic's `partial_json: ""`, an
 * OpenAI-compatible server that sends no `arguments` at all), and client
 * code that parses the joined text as JSON (the OpenAI SDK pattern) throws.
 */
export const EMPTY_ARGUMENTS = '{}'

/** True when `text` holds no argument bytes (nothing, or only whitespace). */
export function isEmptyArguments(text: string): boolean {
  return text.trim() === ''
}

/**
 * Wraps a stream parser of a wire with no per-call end marker (OpenAI's
 * chunks): before the answer's `finish`, each tool call whose deltas carried
 * no argument text gets one more delta, `{}`, so the streamed arguments
 * agree with the whole answer's. Events pass through untouched otherwise
 * (the same array: nothing is allocated per event for a stream without
 * tool calls). Each `{}` added is marked (`markUnfinished`): no argument
 * text came, so a call cut right after its name reads the same — the
 * answer's `length` finish then says it was cut (`cutBeforeArguments`).
 */
export function withEmptyArgumentsAsObject(parser: StreamParser): StreamParser {
  // Each tool call by its wire index (else its id, as the collector keys
  // them), in the order it came: whether argument text came for it. Keyed by
  // id alone, the `{}` added for a call with an index was read as a second call.
  let calls:
    | Map<
        number | string,
        { id: string; index: number | undefined; name: string; hasArguments: boolean }
      >
    | undefined

  const pass = (events: StreamEvent[]): StreamEvent[] => {
    let finishAt = -1
    for (let i = 0; i < events.length; i++) {
      const event = events[i] as StreamEvent
      if (event.type === 'tool_call') {
        calls ??= new Map()
        const key = event.index ?? event.id
        const call = calls.get(key)
        const hasArguments = !isEmptyArguments(event.argumentsDelta)
        if (call === undefined) {
          calls.set(key, { id: event.id, index: event.index, name: event.name, hasArguments })
        } else if (hasArguments) call.hasArguments = true
      } else if (event.type === 'finish') {
        finishAt = i
        break
      }
    }
    if (finishAt < 0 || calls === undefined) return events
    const empty: StreamEvent[] = []
    for (const call of calls.values()) {
      if (call.hasArguments) continue
      call.hasArguments = true
      const { id, index, name } = call
      empty.push(
        markUnfinished<StreamEvent>(
          index === undefined
            ? { type: 'tool_call', id, name, argumentsDelta: EMPTY_ARGUMENTS }
            : { type: 'tool_call', id, name, argumentsDelta: EMPTY_ARGUMENTS, index },
        ),
      )
    }
    if (empty.length === 0) return events
    return [...events.slice(0, finishAt), ...empty, ...events.slice(finishAt)]
  }

  return {
    get done() {
      return parser.done
    },
    get finishing() {
      return parser.finishing === true
    },
    // Passed on, or the counts the parser holds never reached the charge.
    get usageSoFar() {
      return parser.usageSoFar
    },
    get responseId() {
      return parser.responseId
    },
    get serviceTier() {
      return parser.serviceTier
    },
    get logprobsSoFar() {
      return parser.logprobsSoFar
    },
    parseStreamEvent: (message) => pass(parser.parseStreamEvent(message)),
    end: () => pass(parser.end()),
  }
}
