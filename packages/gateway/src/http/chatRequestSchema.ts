import { z } from 'zod'
import { MAX_JSON_DEPTH, nestsDeeperThan } from './jsonDepth.js'
import { upToFirstBad } from './upToFirstBad.js'

/**
 * The OpenAI Chat Completions request, as the gateway accepts it. Text only:
 * content is a string or text parts. A field that is set is either used, or
 * refused here or by the provider's dialect (see the README's field table),
 * never dropped. Numbers are bounded as OpenAI documents them; free-form JSON
 * (schemas, arguments, unknown fields) is capped at `MAX_JSON_DEPTH` levels.
 * `null` means "not set" for every optional field, as in OpenAI's API.
 */

/** Limits on free-form strings and lists: far above real use, below what hurts. */
const MAX_MESSAGES = 100_000
const MAX_TOOLS = 512
/** Citations of one assistant message sent back: far past what a search answer cites. */
const MAX_ANNOTATIONS = 1024
const MAX_ID = 1024

/**
 * A check's own message. A schema-level `error` (`z.string({ error })`) is
 * zod's message for every issue of that schema, its checks' included: without
 * one of their own, `temperature: 3` was told "expected a number" and a
 * 300-character model "expected a string".
 */
const upTo = (max: number, what = 'characters') => ({ error: `expected at most ${max} ${what}` })
const nonEmpty = { error: 'expected a non-empty string' }

const shallow = <T extends z.ZodType>(schema: T) =>
  schema.refine((value) => !nestsDeeperThan(value, MAX_JSON_DEPTH), {
    error: `nested deeper than ${MAX_JSON_DEPTH} levels`,
  })

/**
 * A record that refuses a `__proto__` key rather than lose it. JSON.parse
 * keeps the key, but zod's records skip it unchecked (assigned to the copy
 * they build, it would set the copy's prototype): `metadata: {"__proto__":
 * "x"}` reached OpenAI as `{}`, and `logit_bias: {"__proto__": 1}` passed
 * its token-id check. Deeper down, inside a value a record takes as it is
 * (a tool's `properties`), the key goes as sent.
 */
const everyKeyKept = <T extends z.ZodType>(record: T) =>
  z.preprocess((value, ctx) => {
    if (typeof value === 'object' && value !== null && Object.hasOwn(value, '__proto__')) {
      ctx.addIssue({
        code: 'custom',
        path: ['__proto__'],
        message: 'a key named "__proto__" cannot be read (JavaScript objects drop it): rename it',
      })
      return z.NEVER
    }
    return value
  }, record)

/**
 * A record whose keys the client chooses (`logit_bias`, `metadata`), read
 * up to its first bad entry, as `upToFirstBad` reads a list: zod reports
 * every entry that fails, some 5–10 µs each, and 300,000 bad `logit_bias`
 * keys (3.3 MiB, within the body limit) held the event loop 2.9 s for one
 * 400 naming the first. The entries up to and including the first bad one
 * go to zod's own record, which refuses that one with its message and path
 * as before; a valid record is read twice, which a short one (every real
 * one) is spared.
 */
const upToFirstBadEntry = <K extends z.ZodType<PropertyKey>, V extends z.ZodType>(
  key: K,
  entry: V,
) =>
  z.preprocess(
    (value) => {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return value
      const keys = Object.keys(value)
      if (keys.length <= SHORT_RECORD) return value
      for (let i = 0; i < keys.length; i++) {
        const name = keys[i] as string
        if (
          !key.safeParse(name).success ||
          !entry.safeParse((value as Record<string, unknown>)[name]).success
        ) {
          const cut: Record<string, unknown> = {}
          for (let j = 0; j <= i; j++) {
            const kept = keys[j] as string
            cut[kept] = (value as Record<string, unknown>)[kept]
          }
          return cut
        }
      }
      return value
    },
    z.record(key, entry),
  )

/** The most entries a record is read with zod alone, every bad one reported. */
const SHORT_RECORD = 1_000

const jsonObject = everyKeyKept(
  z.record(z.string(), z.unknown(), { error: 'expected a JSON object' }),
)

const textPart = z.strictObject({
  type: z.literal('text', {
    error: 'only text parts are supported (no images, audio or files)',
  }),
  text: z.string({ error: 'expected a string' }),
})

const content = z.union([z.string(), upToFirstBad(textPart)], {
  error: 'expected a string or an array of text parts',
})

/**
 * A field openai-node's helpers add to the message they hand back (any JSON),
 * which the usual chat loop pushes back into `messages` as it came: taken,
 * as OpenAI's API takes it (strict compatible servers refused it, so
 * openai-node's own tool runner now strips it: openai/openai-node#1990), and
 * sent to no provider.
 */
const helperOnly = shallow(z.unknown()).optional()

/**
 * An assistant message's content: text parts, and the refusal parts OpenAI's
 * assistant message takes too (`{ type: "refusal", refusal }`, the same turn
 * as the `refusal` field).
 */
const refusalPart = z.strictObject({
  type: z.literal('refusal'),
  refusal: z.string({ error: 'expected a string' }),
})
const assistantContent = z.union(
  [
    z.string(),
    upToFirstBad(
      z.discriminatedUnion('type', [textPart, refusalPart], {
        error: 'only text and refusal parts are supported (no audio)',
      }),
    ),
  ],
  { error: 'expected a string or an array of text or refusal parts' },
)

/** A participant's name: forwarded by OpenAI-compatible dialects, refused by the others. */
const name = z.string({ error: 'expected a string' }).max(MAX_ID, upTo(MAX_ID)).nullish()

const toolCall = z.strictObject({
  id: z.string().min(1).max(MAX_ID),
  type: z.literal('function'),
  // openai-python's stream helper keeps the delta's `index` on each call of
  // the message it assembles (its models allow extra fields), and the chat
  // loop sends that message back: taken, sent to no provider (the calls'
  // order is the array's).
  index: z
    .number({ error: 'expected a number' })
    .int('expected a whole number')
    .min(0, 'expected 0 or more')
    .optional(),
  function: z.strictObject({
    name: z.string().min(1).max(MAX_ID),
    arguments: z.string({ error: 'expected a JSON string' }),
    // openai-node's `.parse()` with `zodFunction` tools: the arguments it
    // parsed, on the message a client pushes back. `arguments` says it all.
    parsed_arguments: helperOnly,
  }),
})

const message = z.discriminatedUnion(
  'role',
  [
    z.strictObject({ role: z.enum(['system', 'developer']), content, name }),
    z.strictObject({ role: z.literal('user'), content, name }),
    z
      .strictObject({
        role: z.literal('assistant'),
        content: assistantContent.nullish(),
        name,
        tool_calls: upToFirstBad(toolCall, { max: [MAX_TOOLS] }).nullish(),
        // OpenAI's assistant message has these too; openai-python's
        // `message.model_dump()` sends them as `null` on every answer pushed
        // back (`null` is "not set", as OpenAI takes it). Set, they are
        // refused: the gateway answers text only, and `tool_calls` replaced
        // `function_call` (README, "Refused for every provider").
        audio: z
          .null({ error: 'audio answers are not supported (text only); expected null' })
          .optional(),
        function_call: z
          .null({
            error: 'deprecated function calling is not supported (use tool_calls); expected null',
          })
          .optional(),
        // What the gateway's own answers carry, echoed back by clients: a
        // refused answer is `content: null` with its text here.
        refusal: z.string({ error: 'expected a string or null' }).nullish(),
        // The citations the gateway's answers now carry (`url_citation`s):
        // accepted so such an answer can be pushed back as it came (only
        // `[]` was, a 400 for every answer with a citation), sent to no provider.
        annotations: upToFirstBad(z.record(z.string(), z.unknown()), {
          error: 'expected an array of objects',
          max: [MAX_ANNOTATIONS],
        }).nullish(),
        // The answer's thinking (DeepSeek's spelling). Accepted so the answer
        // can be pushed back as it came; an unsigned thinking block of the
        // turn (parseChatRequest), which llm sends back only where a provider
        // wants it (DeepSeek's thinking mode, a tool loop's turns): Anthropic's
        // would need the signature the OpenAI shape has no place for (README,
        // "Request fields").
        reasoning_content: z.string({ error: 'expected a string or null' }).nullish(),
        // `.parse()`'s parsed content, and `null` on every message of
        // `.stream()`'s finalMessage(): `content` holds what was parsed.
        parsed: helperOnly,
      })
      .refine((m) => m.content != null || m.refusal != null || (m.tool_calls?.length ?? 0) > 0, {
        error: 'expected a string or an array of text parts (or tool_calls, or a refusal)',
        path: ['content'],
      }),
    z.strictObject({
      role: z.literal('tool'),
      content,
      // The function's name, as OpenAI's cookbook wrote tool results (OpenAI
      // takes it): sent to no provider, since it repeats the
      // name of the call `tool_call_id` names, which is what pairs them.
      name,
      tool_call_id: z
        .string({ error: 'expected a string' })
        .min(1, nonEmpty)
        .max(MAX_ID, upTo(MAX_ID)),
    }),
  ],
  { error: 'expected an object whose role is system, developer, user, assistant or tool' },
)

const tool = z.strictObject({
  type: z.literal('function', { error: 'only function tools are supported' }),
  function: z.strictObject({
    name: z
      .string({ error: 'expected a string' })
      .regex(/^[a-zA-Z0-9_-]{1,64}$/, { error: '1–64 letters, digits, _ or -' }),
    description: z.string().nullish(),
    parameters: shallow(jsonObject).nullish(),
    strict: z.boolean({ error: 'expected true or false' }).nullish(),
  }),
})

// Checked for `__proto__` before the union: its open branch forwards zod's
// copy, which lacks the key, and a union's refusal names another branch's field.
const toolChoice = everyKeyKept(
  z.union(
    [
      z.enum(['none', 'auto', 'required']),
      z.strictObject({
        type: z.literal('function'),
        function: z.strictObject({ name: z.string().min(1).max(MAX_ID) }),
      }),
      // `allowed_tools` and later kinds: forwarded to OpenAI-compatible providers as they are.
      shallow(z.looseObject({ type: z.string().max(64) })),
    ],
    { error: 'expected none, auto, required or a tool choice object' },
  ),
)

const responseFormat = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('text') }),
    z.strictObject({ type: z.literal('json_object') }),
    z.strictObject({
      type: z.literal('json_schema'),
      json_schema: z.strictObject({
        name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, { error: '1–64 letters, digits, _ or -' }),
        description: z.string().nullish(),
        schema: shallow(jsonObject).nullish(),
        strict: z.boolean().nullish(),
      }),
    }),
  ],
  { error: 'expected type text, json_object or json_schema' },
)

const number = (min: number, max: number) => {
  const range = { error: `expected a number from ${min} to ${max}` }
  return z.number(range).min(min, range).max(max, range).nullish()
}
const TOKENS = { error: `expected an integer from 1 to ${2 ** 31 - 1}` }
const tokens = z
  .number(TOKENS)
  .int(TOKENS)
  .min(1, TOKENS)
  .max(2 ** 31 - 1, TOKENS)
  .nullish()
const SEED = { error: 'expected an integer from -(2^53 - 1) to 2^53 - 1' }
const BIAS = { error: 'expected a number from -100 to 100' }
// OpenAI's range: at most 20 alternatives per token.
const TOP_LOGPROBS = { error: 'expected an integer from 0 to 20' }
const shortString = z.string({ error: 'expected a string' }).max(MAX_ID, upTo(MAX_ID)).nullish()

export const chatRequestSchema = z.looseObject({
  model: z.string({ error: 'expected a string' }).min(1, nonEmpty).max(256, upTo(256)),
  messages: upToFirstBad(message, {
    error: 'expected an array of messages',
    min: [1, { error: 'expected at least one message' }],
    max: [MAX_MESSAGES, upTo(MAX_MESSAGES, 'messages')],
  }),
  max_tokens: tokens,
  max_completion_tokens: tokens,
  temperature: number(0, 2),
  top_p: number(0, 1),
  stop: z
    .union([z.string(), upToFirstBad(z.string(), { max: [16] })], {
      error: 'expected a string or an array of up to 16 strings',
    })
    .nullish(),
  stream: z.boolean({ error: 'expected true or false' }).nullish(),
  stream_options: z
    .strictObject({
      include_usage: z.boolean().nullish(),
      include_obfuscation: z.boolean().nullish(),
    })
    .nullish(),
  tools: upToFirstBad(tool, {
    error: 'expected an array of tools',
    max: [MAX_TOOLS, upTo(MAX_TOOLS, 'tools')],
  }).nullish(),
  tool_choice: toolChoice.nullish(),
  parallel_tool_calls: z.boolean({ error: 'expected true or false' }).nullish(),
  response_format: responseFormat.nullish(),
  seed: z
    .number(SEED)
    .int(SEED)
    .min(Number.MIN_SAFE_INTEGER, SEED)
    .max(Number.MAX_SAFE_INTEGER, SEED)
    .nullish(),
  n: z.literal(1, { error: 'only 1: the gateway answers with one choice' }).nullish(),
  frequency_penalty: number(-2, 2),
  presence_penalty: number(-2, 2),
  logit_bias: everyKeyKept(
    upToFirstBadEntry(
      z.string().regex(/^\d{1,10}$/, { error: 'keys are token ids' }),
      z.number(BIAS).min(-100, BIAS).max(100, BIAS),
    ),
  ).nullish(),
  // Forwarded to OpenAI-compatible providers and written back in the answer
  // (`choices[0].logprobs`); Gemini's are translated (`responseLogprobs`,
  // `logprobsResult`); Anthropic has none, and refuses `true`.
  logprobs: z.boolean({ error: 'expected true or false' }).nullish(),
  top_logprobs: z
    .number(TOP_LOGPROBS)
    .int(TOP_LOGPROBS)
    .min(0, TOP_LOGPROBS)
    .max(20, TOP_LOGPROBS)
    .nullish(),
  user: shortString,
  safety_identifier: shortString,
  prompt_cache_key: shortString,
  prompt_cache_retention: shortString,
  service_tier: shortString,
  store: z.boolean({ error: 'expected true or false' }).nullish(),
  metadata: everyKeyKept(upToFirstBadEntry(z.string().max(64), z.string().max(512))).nullish(),
  modalities: upToFirstBad(
    z.literal('text', { error: 'only text: the gateway answers text only' }),
  ).nullish(),
  audio: z.null({ error: 'not supported: the gateway answers text only' }).optional(),
  // The deprecated function calling. Forwarded as an unknown field, a
  // provider answered `message.function_call`, which the gateway's answer has
  // no place for: the client got `finish_reason: "tool_calls"` with neither
  // the call nor any tool_calls. `tools` / `tool_choice` say the same.
  functions: z
    .null({ error: 'deprecated and not supported: use tools (answers carry tool_calls)' })
    .optional(),
  function_call: z
    .null({ error: 'deprecated and not supported: use tool_choice (answers carry tool_calls)' })
    .optional(),
  prediction: z.strictObject({ type: z.literal('content'), content }).nullish(),
  reasoning_effort: z.string({ error: 'expected a string' }).max(64, upTo(64)).nullish(),
  verbosity: z.string({ error: 'expected a string' }).max(64, upTo(64)).nullish(),
  web_search_options: shallow(jsonObject).nullish(),
})

export type ChatRequestBody = z.infer<typeof chatRequestSchema>

/** The fields this schema knows; any other is an extra field (forwarded or refused by the dialect). */
export const KNOWN_FIELDS: ReadonlySet<string> = new Set(Object.keys(chatRequestSchema.shape))
