import { describeValue, isHeaderValue, optionError, quoted } from '@hourglass/core'
import { ADMISSION_METHODS, assertMethods, RETRY_BUDGETS_METHODS } from '../assertMethods.js'
import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import { RETRY_DELAY_OPTION_NAMES } from '../retry/retryDelay.js'
import type { ChatMessage, ChatRequest } from '../types.js'
import type {
  CallLimits,
  CallModelOptions,
  RecoveryOptions,
  RetryOptions,
} from './CallModelOptions.js'
import { checkBounds } from './checkBounds.js'
import { nonFiniteIn } from './nonFiniteIn.js'
import { CONTEXT_NAMES, refuseUnknownNames } from './unknownOptionNames.js'

/**
 * Refuses, before anything is sent, options a call cannot honour: a missing
 * model list or request, an entry that is not an adapter, a `maxTokens` that
 * is not a whole number of tokens ≥ 1 (`InvalidChatRequestError`: without a
 * cap neither the bill nor the TPM limit is bounded), and numeric knobs that
 * are NaN, negative or not numbers. NaN slips through every comparison (a NaN
 * `maxRecoveries` never stops, a NaN wait is slept as 0), so it is named
 * here instead of given a meaning. Once per call: plain checks, no
 * allocation unless something is wrong — but for the walk of the values
 * written as given (`extra`, tools' schemas, tool calls' arguments), a step
 * per object or array in them, none per number.
 */
export function checkCallOptions(options: CallModelOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`callModel: options must be an object, got ${describeValue(options)}`)
  }
  refuseUnknownNames(options, CALL_OPTION_NAMES, 'callModel()', CONTEXT_NAMES)
  const { models, request, retry, recovery } = options
  if (!Array.isArray(models) || models.length === 0) {
    throw new TypeError(
      `callModel: models must list at least one model adapter, got ${describeValue(models)}`,
    )
  }
  for (let i = 0; i < models.length; i++) {
    const model = models[i]
    if (typeof model?.send !== 'function' || typeof model.open !== 'function') {
      throw new TypeError(
        `callModel: models[${i}] must be a model adapter (openAICompatible, anthropic, gemini, createAdapter), got ${describeValue(model)}`,
      )
    }
  }
  if (typeof request !== 'object' || request === null) {
    throw new TypeError(
      `callModel: request must be a ChatRequest ({ messages, maxTokens, … }), got ${describeValue(request)}`,
    )
  }
  refuseUnknownRequestFields(request)
  checkMessages(request.messages)
  const { maxTokens } = request
  if (!Number.isSafeInteger(maxTokens) || maxTokens < 1) {
    throw new InvalidChatRequestError(
      'maxTokens',
      `required, a whole number of tokens ≥ 1 (it bounds cost and latency), got ${describeValue(maxTokens)}`,
    )
  }
  checkRequestFields(request)
  nonNegative('firstTokenTimeoutMs', options.firstTokenTimeoutMs, 'ms')
  // Read on every attempt: a number of ms for `deadline`, or an
  // AbortController for `signal`, failed as "deadline?.throwIfExpired is not
  // a function" — thrown out of `callModel` itself for a stream's signal.
  checkBounds('callModel', options)
  const { onAttempt } = options
  // Its failures are ignored (a logging hook must not change the outcome):
  // one that is no function was too, and every record went nowhere unseen.
  if (onAttempt !== undefined && typeof onAttempt !== 'function') {
    throw new TypeError(
      `callModel: onAttempt must be a function (record) => void, got ${describeValue(onAttempt)}`,
    )
  }
  // Sent as a header on every attempt: a line break made undici refuse each
  // one, reported as a network failure of every model in the list.
  const key = options.idempotencyKey
  if (key !== undefined && (typeof key !== 'string' || key === '' || !isHeaderValue(key))) {
    throw new TypeError(
      `callModel: idempotencyKey must be a non-empty string of visible ASCII (an HTTP header value), got ${describeValue(key)}`,
    )
  }
  object('retry', retry)
  object('recovery', recovery)
  object('limits', options.limits)
  refuseUnknownNames(retry, RETRY_OPTION_NAMES, 'callModel() retry')
  refuseUnknownNames(recovery, RECOVERY_OPTION_NAMES, 'callModel() recovery')
  refuseUnknownNames(options.limits, LIMIT_OPTION_NAMES, 'callModel() limits')
  // Used by their methods on the call's path: `true`, `{}` or a plain
  // options object in their place failed as "state.admission?.forecast is
  // not a function" (or the retry budgets', the cost budget's) from inside
  // the call. `false` turns admission or the retry budgets off.
  const { limits } = options
  if (limits?.admission !== false) {
    shaped(
      'limits.admission',
      limits?.admission,
      ADMISSION_METHODS,
      'an Admission (new Admission()) or false',
    )
  }
  shaped(
    'limits.budget',
    limits?.budget,
    COST_BUDGET,
    'a CostBudget (new CostBudget({ limitUsd, prices }))',
  )
  if (retry !== undefined) {
    if (retry.budgets !== false) {
      shaped(
        'retry.budgets',
        retry.budgets,
        RETRY_BUDGETS_METHODS,
        'a RetryBudgetRegistry (new RetryBudgetRegistry()) or false',
      )
    }
    // Anything but 'background' was read as foreground: a typo (`'low'`)
    // retried overloads the caller meant to shed.
    const { priority } = retry
    if (priority != null && priority !== 'foreground' && priority !== 'background') {
      throw new TypeError(
        `callModel: retry.priority must be 'foreground' or 'background', got ${describeValue(priority)}`,
      )
    }
    object('retry.delay', retry.delay)
    refuseUnknownNames(retry.delay, DELAY_OPTION_NAMES, 'callModel() retry.delay')
    // Clamped to 1–10 as documented: only NaN, or no number at all, is refused.
    number('retry.maxAttempts', retry.maxAttempts, 'a number (clamped to 1–10)')
    nonNegative('retry.max529Retries', retry.max529Retries, 'count')
    nonNegative('retry.minAttemptMs', retry.minAttemptMs, 'ms')
    // Finite, as in @hourglass/fetch: Infinity would trust a day-long Retry-After again.
    finiteNonNegative('retry.maxRetryAfterMs', retry.maxRetryAfterMs, 'ms')
    const { delay } = retry
    if (delay !== undefined) {
      finiteNonNegative('retry.delay.baseDelayMs', delay.baseDelayMs, 'ms')
      finiteNonNegative('retry.delay.maxDelayMs', delay.maxDelayMs, 'ms')
      finiteNonNegative('retry.delay.jitterRatio', delay.jitterRatio, 'ratio')
      finiteNonNegative('retry.delay.overloadFloorMs', delay.overloadFloorMs, 'ms')
      finiteNonNegative('retry.delay.overloadJitterMs', delay.overloadJitterMs, 'ms')
      finiteNonNegative('retry.delay.hintJitterRatio', delay.hintJitterRatio, 'ratio')
      if (delay.random !== undefined && typeof delay.random !== 'function') {
        throw new TypeError(
          `callModel: retry.delay.random must be a function returning [0, 1), got ${describeValue(delay.random)}`,
        )
      }
    }
  }
  if (recovery !== undefined) {
    wholeNumber('recovery.maxTokensCeiling', recovery.maxTokensCeiling, 'tokens')
    wholeNumber('recovery.maxRecoveries', recovery.maxRecoveries, 'steps')
    // Called only once a model refused the prompt as too long: a step that is
    // no function failed then, as "reduce is not a function", after a request
    // had been sent and billed.
    for (const step of ['collapse', 'compact'] as const) {
      const reduce: unknown = recovery[step]
      if (reduce !== undefined && typeof reduce !== 'function') {
        throw new TypeError(
          `callModel: recovery.${step} must be a function (messages) => messages, got ${describeValue(reduce)}`,
        )
      }
    }
  }
}

/** Every option name each group takes: any other is refused, naming it. */
const CALL_OPTION_NAMES: ReadonlySet<string> = new Set(
  Object.keys({
    models: true,
    request: true,
    deadline: true,
    signal: true,
    firstTokenTimeoutMs: true,
    idempotencyKey: true,
    promptVersion: true,
    onAttempt: true,
    retry: true,
    limits: true,
    recovery: true,
  } satisfies Record<keyof CallModelOptions, true>),
)
const RETRY_OPTION_NAMES: ReadonlySet<string> = new Set(
  Object.keys({
    maxAttempts: true,
    max529Retries: true,
    priority: true,
    delay: true,
    minAttemptMs: true,
    maxRetryAfterMs: true,
    budgets: true,
    resendAfterFirstTokenTimeout: true,
  } satisfies Record<keyof RetryOptions, true>),
)
// The one list `retryDelay` reads its options by.
const DELAY_OPTION_NAMES: ReadonlySet<string> = new Set(RETRY_DELAY_OPTION_NAMES)
const LIMIT_OPTION_NAMES: ReadonlySet<string> = new Set(
  Object.keys({ admission: true, budget: true } satisfies Record<keyof CallLimits, true>),
)
const RECOVERY_OPTION_NAMES: ReadonlySet<string> = new Set(
  Object.keys({
    collapse: true,
    compact: true,
    maxTokensCeiling: true,
    maxRecoveries: true,
  } satisfies Record<keyof RecoveryOptions, true>),
)

/** The methods a call uses of each shared object it is given. */
const COST_BUDGET = [
  'assertPriced',
  'assertCanSpend',
  'estimate',
  'reserve',
  'record',
  'recordEstimate',
  'worstOutputTokens',
] as const

/** An object with every one of `methods`, or undefined or null (the default, as every option reads null). */
function shaped(name: string, value: unknown, methods: readonly string[], rule: string): void {
  assertMethods('callModel', name, value, methods, rule)
}

/** An object of options, or undefined (the defaults). */
function object(name: string, value: unknown): void {
  if (value === undefined || (typeof value === 'object' && value !== null)) return
  throw new TypeError(
    `callModel: ${name} must be an object of options, got ${describeValue(value)}`,
  )
}

/** A number (Infinity included) that is not NaN; undefined = the default. */
function number(name: string, value: number | undefined, rule: string): void {
  if (value === undefined || (typeof value === 'number' && !Number.isNaN(value))) return
  refuse(name, value, rule)
}

/** A number ≥ 0 (Infinity included); undefined = the default. */
function nonNegative(name: string, value: number | undefined, unit: string): void {
  if (value === undefined || (typeof value === 'number' && value >= 0)) return
  refuse(name, value, `a number ≥ 0 (${unit})`)
}

/** A finite number ≥ 0 (decideRetry and retryDelay refuse Infinity there); undefined = the default. */
function finiteNonNegative(name: string, value: number | undefined, unit: string): void {
  if (value === undefined || (typeof value === 'number' && value >= 0 && value < Infinity)) return
  refuse(name, value, `a finite number ≥ 0 (${unit})`)
}

/** A whole number ≥ 0; undefined = the default. */
function wholeNumber(name: string, value: number | undefined, unit: string): void {
  if (value === undefined || (Number.isSafeInteger(value) && value >= 0)) return
  refuse(name, value, `a whole number ≥ 0 (${unit})`)
}

/** A `TypeError` for a value that is no number, a `RangeError` for one out of range (NaN included). */
function refuse(name: string, value: unknown, rule: string): never {
  throw optionError(`callModel: ${name}`, rule, value)
}

/**
 * Refuses a history the request builders cannot read: not an array, an
 * entry that is no `{ role, content }`, or no message at all. `source`
 * names who produced it when it is not the caller's request (a recovery
 * step's result), so the error points at the culprit. A hole (a sparse
 * array) is left to the builders, which skip it (an array of holes alone
 * is no message at all).
 */
export function checkMessages(messages: unknown, source?: string | undefined): void {
  const at = source === undefined ? '' : `${source} → `
  if (!Array.isArray(messages)) {
    throw new InvalidChatRequestError(
      `${at}messages`,
      `expected an array, got ${describeValue(messages)}`,
    )
  }
  // Each message is read by the request builder: a null or a message without
  // a role surfaced as "Cannot read properties of null" from deep inside it.
  let present = 0
  for (let i = 0; i < messages.length; i++) {
    if (!(i in messages)) continue
    present++
    const message: unknown = messages[i]
    const { role, content } = (message ?? {}) as { role?: unknown; content?: unknown }
    if (
      typeof message !== 'object' ||
      message === null ||
      typeof role !== 'string' ||
      (typeof content !== 'string' && !Array.isArray(content))
    ) {
      throw new InvalidChatRequestError(
        `${at}messages[${i}]`,
        `expected { role, content: string | ContentBlock[] }, got ${describeValue(message)}`,
      )
    }
    // Anthropic's and Gemini's builders read any role but assistant (and
    // system, tool) as the user's: OpenAI's `developer` instructions, or a
    // typo, went out as a user turn, on a fallback without a word.
    if (!ROLES.has(role)) {
      throw new InvalidChatRequestError(
        `${at}messages[${i}]`,
        `expected role system, user, assistant or tool, got ${quoted(role, 40)}${role === 'developer' ? " (write OpenAI's developer message as 'system': every dialect sends it as the model's instructions)" : ''}`,
      )
    }
    // OpenAI's own shape of a tool history: a ChatMessage has no such field,
    // and Anthropic's and Gemini's builders sent such a turn without its
    // calls, the tool's output as user text.
    for (const wire of OPENAI_MESSAGE_FIELDS) {
      const value = (message as Record<string, unknown>)[wire]
      if (value !== undefined && value !== null) {
        throw new InvalidChatRequestError(
          `${at}messages[${i}].${wire}`,
          `OpenAI's wire name, no field of ChatMessage, and would not be sent: write ${wire === 'tool_call_id' ? "the output as a { type: 'tool_result', toolCallId, content } block" : "each call as a { type: 'tool_call', id, name, arguments } block"} in content`,
        )
      }
    }
    if (Array.isArray(content)) checkBlocks(content, `${at}messages[${i}]`)
  }
  // No dialect takes an empty conversation: OpenAI-compatible servers answer
  // 400 (`messages` too short), and Anthropic's and Gemini's builders refuse
  // one without a user or assistant turn. A system prompt has no field of its
  // own in a `ChatRequest` (it is a `system` message), so none is lost here.
  // OpenAI's wire sent `messages: []` and got its 400 back after a request
  // went out. Holes are no messages either (the builders skip them).
  if (present === 0) {
    throw new InvalidChatRequestError(
      `${at}messages`,
      `expected at least one message (no provider answers an empty conversation), got ${messages.length === 0 ? '[]' : `${messages.length} empty slots`}`,
    )
  }
}

/** OpenAI's message fields of a tool history, which a ChatMessage writes as content blocks. */
const OPENAI_MESSAGE_FIELDS = ['tool_calls', 'tool_call_id', 'function_call'] as const

/** The fields of a `ChatRequest`. */
const REQUEST_FIELDS: ReadonlySet<string> = new Set(
  Object.keys({
    messages: true,
    maxTokens: true,
    temperature: true,
    topP: true,
    stop: true,
    tools: true,
    stream: true,
    metadata: true,
    extra: true,
  } satisfies Record<keyof ChatRequest, true>),
)

/** Another SDK's, or a wire's, name of a ChatRequest field. */
const REQUEST_FIELD_MEANT: Readonly<Record<string, string>> = {
  max_tokens: 'maxTokens',
  max_completion_tokens: 'maxTokens',
  max_output_tokens: 'maxTokens',
  maxOutputTokens: 'maxTokens',
  top_p: 'topP',
  stop_sequences: 'stop',
  stopSequences: 'stop',
  system: "a { role: 'system', content } message first in messages",
  // In extra it would not be sent either: a dialect never lets extra
  // overwrite a field it built, and the model is the adapter's.
  model: "the adapter's model (openAICompatible({ model }), one adapter per model in models)",
}

/**
 * A field `ChatRequest` does not have was dropped without a word: an
 * openai-node user's `response_format` or `tool_choice` at the top of
 * `request`, an Anthropic SDK user's `system`, went nowhere — the model
 * answered prose where JSON was asked for. One set to `undefined` is none.
 */
function refuseUnknownRequestFields(request: object): void {
  for (const key in request) {
    if (!Object.hasOwn(request, key) || REQUEST_FIELDS.has(key)) continue
    if ((request as Record<string, unknown>)[key] === undefined) continue
    const meant = Object.hasOwn(REQUEST_FIELD_MEANT, key)
      ? REQUEST_FIELD_MEANT[key]
      : `extra: { ${key} } (a provider's own fields go in extra, under their wire names)`
    throw new InvalidChatRequestError(
      key,
      `no field of ChatRequest, and would not be sent: write ${meant}`,
    )
  }
}

const ROLES: ReadonlySet<string> = new Set<ChatMessage['role']>([
  'system',
  'user',
  'assistant',
  'tool',
])

/**
 * The request's optional fields, as the builders read them. Each used to go
 * its own way: a NaN `temperature` went out as `null` (the provider's
 * default: NaN given a meaning), a `tools` that is no array was dropped (the
 * model answered without its tools), and `stop: "END"` (a string, as
 * OpenAI's API takes it), a null tool or `extra: null` threw a raw
 * TypeError from inside Anthropic's or Gemini's builder — or, for `stop`,
 * went to Gemini as is, whose 400 is never sent to a fallback.
 */
function checkRequestFields(request: CallModelOptions['request']): void {
  // Only `true` streams: `stream: 'true'` (a query string's, a config file's)
  // or `1` sent a whole-answer request, billed, and returned a promise the
  // caller's `for await` threw on.
  const stream: unknown = request.stream
  if (stream !== undefined && typeof stream !== 'boolean') {
    throw new InvalidChatRequestError('stream', `true or false, got ${describeValue(stream)}`)
  }
  for (const field of ['temperature', 'topP'] as const) {
    const value: unknown = request[field]
    if (
      value !== undefined &&
      !(typeof value === 'number' && Number.isFinite(value) && value >= 0)
    ) {
      throw new InvalidChatRequestError(field, `a finite number ≥ 0, got ${describeValue(value)}`)
    }
  }
  const stop: unknown = request.stop
  if (stop !== undefined) {
    if (!Array.isArray(stop)) {
      throw new InvalidChatRequestError(
        'stop',
        typeof stop === 'string'
          ? `an array of strings, got a string (one sequence is written [${quoted(stop, 20)}])`
          : `an array of strings, got ${describeValue(stop)}`,
      )
    }
    stop.forEach((sequence: unknown, i) => {
      if (typeof sequence !== 'string') {
        throw new InvalidChatRequestError(`stop[${i}]`, `a string, got ${describeValue(sequence)}`)
      }
    })
  }
  const tools: unknown = request.tools
  if (tools !== undefined) {
    if (!Array.isArray(tools)) {
      throw new InvalidChatRequestError(
        'tools',
        `an array of tool definitions, got ${describeValue(tools)}`,
      )
    }
    tools.forEach((tool: unknown, i) => {
      const name =
        typeof tool === 'object' && tool !== null ? (tool as { name?: unknown }).name : undefined
      if (typeof name !== 'string') {
        throw new InvalidChatRequestError(
          `tools[${i}]`,
          `a tool definition ({ name, parameters }), got ${describeValue(tool)}`,
        )
      }
      // Named by its wire path, as the gateway's client wrote it (OpenAI's
      // `tools[0].function.parameters`): the gateway answers 400 with this
      // as `param`. Written whole, its own `toJSON` called.
      const found = nonFiniteIn((tool as { parameters?: unknown }).parameters, { whole: true })
      if (found !== undefined) {
        refuseNonFinite(`tools[${i}].function.parameters${found.path}`, found.value)
      }
    })
  }
  const extra: unknown = request.extra
  if (
    extra !== undefined &&
    (typeof extra !== 'object' || extra === null || Array.isArray(extra))
  ) {
    throw new InvalidChatRequestError(
      'extra',
      `an object of provider fields, got ${describeValue(extra)}`,
    )
  }
  // Named by its wire path, as a dialect's refusal of an `extra` field is.
  const found = extra === undefined ? undefined : nonFiniteIn(extra)
  // Its fields go into the body as the request's own: `seed`, not `.seed`.
  if (found !== undefined) refuseNonFinite(found.path.replace(/^\./, ''), found.value)
}

/** A NaN or ±Infinity (`nonFiniteIn`) at `field`: JSON.stringify would write it as `null`. */
function refuseNonFinite(field: string, value: number): never {
  throw new InvalidChatRequestError(
    field,
    `a finite number or none, got ${value} (JSON has none: it would go out as null)`,
  )
}

/**
 * The fields each block type is read by: a string each. A block of another
 * type (an OpenAI `image_url` part, a typo) was dropped by every request
 * builder without a word — the model answered a message without its image,
 * or, on OpenAI's wire, an empty one — and a null block surfaced as "Cannot
 * read properties of null" from inside a builder.
 */
const BLOCK_FIELDS: Readonly<Record<string, readonly string[]>> = {
  text: ['text'],
  thinking: ['thinking'],
  tool_call: ['id', 'name'],
  tool_result: ['toolCallId', 'content'],
}

function checkBlocks(blocks: readonly unknown[], at: string): void {
  let toolCalls = 0
  for (let j = 0; j < blocks.length; j++) {
    if (!(j in blocks)) continue
    const block = blocks[j] as { type?: unknown } | null
    const type = typeof block === 'object' && block !== null ? block.type : undefined
    const fields =
      typeof type === 'string' && Object.hasOwn(BLOCK_FIELDS, type) ? BLOCK_FIELDS[type] : undefined
    if (fields === undefined) {
      throw new InvalidChatRequestError(
        `${at}.content[${j}]`,
        `expected a text, thinking, tool_call or tool_result block, got ${typeof type === 'string' ? `a block of type ${quoted(type, 40)}` : describeValue(block)}; nothing was sent`,
      )
    }
    for (const field of fields) {
      const value = (block as Record<string, unknown>)[field]
      if (typeof value !== 'string') {
        throw new InvalidChatRequestError(
          `${at}.content[${j}].${field}`,
          `a ${type as string} block's ${field} must be a string, got ${describeValue(value)}`,
        )
      }
    }
    // Not a call that kept its text (`rawArguments`): OpenAI's wire sends
    // that text, and its parsed value is the text's, not the caller's.
    if (type === 'tool_call') {
      const call = block as { arguments?: unknown; rawArguments?: unknown }
      const k = toolCalls++
      const found =
        call.rawArguments === undefined ? nonFiniteIn(call.arguments, { whole: true }) : undefined
      if (found !== undefined) {
        refuseNonFinite(`${at}.tool_calls[${k}].function.arguments${found.path}`, found.value)
      }
    }
  }
}
