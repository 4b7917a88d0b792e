import { quoted } from '@hourglass/core'
import { blocksOf } from '../dialects/blocks.js'
import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import type { ChatRequest, ContentBlock } from '../types.js'

/**
 * The refusal for a request whose build (the dialect's builder, the body
 * hook, `JSON.stringify` of the body) threw because JSON cannot hold one of
 * the caller's values — a BigInt (an id from a database driver), an object
 * that refers to itself, one nested deeper than the stack allows — with what
 * was thrown as its `cause`; or undefined for any other error, which stays
 * as it was thrown.
 *
 * Asked only once the build has failed: a probe stringifying the tool values
 * before every build cost 20–30 % of it on a long history, and ran at a
 * shallower stack than the real write, so arguments nested just past the
 * limit passed it and still threw a raw RangeError. The culprit is named as
 * a caller finds it — a tool call's arguments, a tool result, a tool's
 * parameters, an `extra` field —; when none of those is to blame but
 * another of the caller's values is (a BigInt `temperature`), the request as
 * a whole is refused. When none of the caller's values is, the same errors
 * came from a custom dialect's or body hook's own code — a builder that
 * recurses forever, a BigInt or a cycle of its own in the body — and were
 * refused as the caller's (a gateway's 400 blaming its client, never
 * retried, the stack naming no function at fault): they stay as thrown.
 *
 * `textOnWire`: OpenAI's wire sends a call's `rawArguments` as they are, so
 * its parsed value, never written, is no culprit.
 */
export function unwritableRequest(
  request: ChatRequest,
  thrown: unknown,
  textOnWire: boolean,
): InvalidChatRequestError | undefined {
  const deep = thrown instanceof RangeError && /call stack/i.test(thrown.message)
  if (!deep && !(thrown instanceof TypeError && JSON_REFUSALS.test(thrown.message)))
    return undefined
  try {
    const found = culprit(request, deep, textOnWire)
    if (found !== undefined) {
      return new InvalidChatRequestError(
        found.place.field,
        `${found.place.what} cannot be sent as JSON: ${found.why}`,
        undefined,
        { cause: thrown },
      )
    }
    const rest = flawOf(restOf(request))
    if (deep ? rest.depth <= MIN_DEEP : rest.kind === undefined) return undefined
    const why = deep ? 'a value is nested deeper than JSON.stringify can write' : oneLine(thrown)
    return new InvalidChatRequestError('request', `cannot be sent as JSON: ${why}`, undefined, {
      cause: thrown,
    })
  } catch {
    // A getter that throws while walked: nothing found to blame, so the
    // error stands as thrown.
    return undefined
  }
}

/** The named value JSON cannot hold (the deepest, for a stack overflow), if any. */
function culprit(
  request: ChatRequest,
  deep: boolean,
  textOnWire: boolean,
): { place: Place; why: string } | undefined {
  let deepest: { place: Place; depth: number } | undefined
  for (const place of placesOf(request, textOnWire)) {
    const flaw = flawOf(place.value)
    // A cycle under a stack overflow is one through `toJSON`: the overflow's cause.
    if (flaw.kind !== undefined && (!deep || flaw.kind === 'cycle')) {
      return { place, why: WHY[flaw.kind] }
    }
    if (deep && flaw.depth > (deepest?.depth ?? MIN_DEEP)) deepest = { place, depth: flaw.depth }
  }
  if (deepest === undefined) return undefined
  return {
    place: deepest.place,
    why: `it is nested ${deepest.depth} levels deep, deeper than JSON.stringify can write`,
  }
}

/** V8's words for a BigInt and for a cycle, the TypeErrors JSON.stringify throws. */
const JSON_REFUSALS = /serialize a BigInt|circular structure/i

/**
 * A value nested less deeply is not taken for the one that overflowed the
 * stack (V8 writes ~4,000 levels on Node 20): a builder's own recursion would be.
 */
const MIN_DEEP = 1000

/** Deeper than any stack JSON.stringify writes on (~4,000 levels on Node 20, ~4,400 on 24). */
const MAX_WALK_DEPTH = 20_000

const WHY = {
  bigint: 'it holds a BigInt (write it as a string, or a number when it fits)',
  cycle: 'it refers to itself',
} as const

interface Place {
  field: string
  what: string
  value: unknown
}

/** The caller's values a builder writes as they are, in request order. */
function* placesOf(request: ChatRequest, textOnWire: boolean): Generator<Place> {
  const messages = request.messages
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    if (message === undefined || typeof message.content === 'string') continue
    const blocks = blocksOf(message)
    let toolCalls = 0
    for (let j = 0; j < blocks.length; j++) {
      const block = blocks[j]
      if (block?.type === 'tool_call') {
        const field = `messages[${i}].tool_calls[${toolCalls++}].function.arguments`
        if (textOnWire && block.rawArguments !== undefined) continue
        yield {
          field,
          what: `the arguments of tool call ${quoted(String(block.id), 60)} (${quoted(String(block.name), 60)})`,
          value: block.arguments,
        }
      } else if (block?.type === 'tool_result') {
        yield {
          field: `messages[${i}].content[${j}].content`,
          what: `the result of tool call ${quoted(String(block.toolCallId), 60)}`,
          value: block.content,
        }
      }
    }
  }
  const tools = request.tools ?? []
  for (let t = 0; t < tools.length; t++) {
    yield {
      // By its wire path, as a NaN in it is named (`checkCallOptions`) and
      // the gateway's client wrote it: the gateway answers 400 with it as `param`.
      field: `tools[${t}].function.parameters`,
      what: `the parameters of tool ${quoted(String(tools[t]?.name), 60)}`,
      value: tools[t]?.parameters,
    }
  }
  for (const key of Object.keys(request.extra ?? {})) {
    yield { field: key, what: 'the field', value: request.extra?.[key] }
  }
}

/**
 * The caller's request without the values `placesOf` names (looked at
 * already, or a call's parsed arguments that OpenAI's wire does not send):
 * the rest of what a builder may write, where a value of no declared type
 * (a BigInt `temperature`) is still the caller's to fix. Built only once
 * writing the request failed.
 */
function restOf(request: ChatRequest): unknown {
  const messages = request.messages.map((message) =>
    Array.isArray(message?.content)
      ? { ...message, content: message.content.map(withoutValue) }
      : message,
  )
  const tools = request.tools?.map((tool) => ({ ...tool, parameters: undefined }))
  return { ...request, messages, tools, extra: undefined }
}

function withoutValue(block: ContentBlock): unknown {
  if (block?.type === 'tool_call') return { ...block, arguments: undefined }
  if (block?.type === 'tool_result') return { ...block, content: undefined }
  return block
}

/**
 * What keeps `value` from JSON — a BigInt or a cycle, the first met in
 * JSON.stringify's order — and how deep it nests. Walked with a stack of
 * its own, not recursion: the value may nest deeper than the stack allows.
 * An object with a `toJSON` is walked as what that returns, as JSON writes it.
 */
function flawOf(value: unknown): { kind: keyof typeof WHY | undefined; depth: number } {
  const open = new Set<object>()
  const stack: ({ value: unknown; depth: number } | { leave: object })[] = [{ value, depth: 0 }]
  let depth = 0
  while (stack.length > 0) {
    const step = stack.pop() as (typeof stack)[number]
    if ('leave' in step) {
      open.delete(step.leave)
      continue
    }
    // Past any stack JSON.stringify has: deep enough to blame, and a walk
    // that ends whatever the value does.
    if (step.depth > MAX_WALK_DEPTH) return { kind: undefined, depth: step.depth }
    let next = step.value
    // Written as JSON.stringify writes it: what its `toJSON` returns (a Date's
    // text; a Money class's `{ cents: 500n }`, which holds a BigInt).
    let original: object | undefined
    if (typeof (next as { toJSON?: unknown } | null)?.toJSON === 'function') {
      original = next as object
      // Met again inside what its own `toJSON` returned: a cycle JSON never
      // sees (each call returns a new object), written until the stack ran out.
      if (open.has(original)) return { kind: 'cycle', depth }
      try {
        next = (next as { toJSON(): unknown }).toJSON()
      } catch {
        continue
      }
    }
    // A boxed BigInt (`Object(5n)`) is refused as the BigInt is.
    if (typeof next === 'bigint' || next instanceof BigInt) return { kind: 'bigint', depth }
    if (typeof next !== 'object' || next === null) continue
    if (open.has(next)) return { kind: 'cycle', depth }
    open.add(next)
    depth = Math.max(depth, step.depth + 1)
    stack.push({ leave: next })
    if (original !== undefined && original !== next) {
      open.add(original)
      stack.push({ leave: original })
    }
    const children = Array.isArray(next) ? next : Object.values(next)
    for (let k = children.length - 1; k >= 0; k--) {
      stack.push({ value: children[k], depth: step.depth + 1 })
    }
  }
  return { kind: undefined, depth }
}

function oneLine(thrown: unknown): string {
  const message = thrown instanceof Error ? thrown.message : String(thrown)
  // V8's text for a cycle names where it closes, over several lines.
  return message.split('\n').join(' ').replace(/\s+/g, ' ').trim()
}
