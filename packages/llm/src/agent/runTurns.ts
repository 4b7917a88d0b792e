import {
  type Deadline,
  errorCode,
  hearAbort,
  isInstance,
  optionError,
  untilEnded,
} from '@hourglass/core'
import { callDeadline, shadowAmbientIfFalse } from '../call/callDeadline.js'
import { checkBounds } from '../call/checkBounds.js'
import { nonFiniteIn } from '../call/nonFiniteIn.js'
import { refuseUnknownNames } from '../call/unknownOptionNames.js'
import { argumentsText } from '../dialects/blocks.js'
import { rewritesAnInteger } from '../dialects/roundedByParsing.js'
import { holdsUnsafeInteger } from '../dialects/toolArguments.js'
import { describeError } from '../errors/describeError.js'
import { MaxTurnsExceededError } from '../errors/MaxTurnsExceededError.js'
import { isSideEffectStoreError } from '../errors/SideEffectStoreError.js'
import { notNaN } from '../retry/checkNumber.js'
import type { ChatMessage, ChatResponse, ContentBlock } from '../types.js'
import { cutBeforeArguments } from './cutBeforeArguments.js'
import { idempotencyKey } from './idempotencyKey.js'
import { cancelUnread, isChatResponse, notAResponse } from './notAResponse.js'
import { type RememberedAnswer, rememberAnswer, replayAnswer } from './rememberedAnswer.js'
import type { SideEffectStore } from './SideEffectStore.js'
import { sideEffect } from './sideEffect.js'

/**
 * A tool the model may call. `key` is its operation key: pass it on as an
 * `Idempotency-Key`. `signal` aborts when the run's deadline ends or its
 * `signal` aborts (pass it to fetch, a child process…); `deadline` is the
 * run's (`RunTurnsOptions.deadline`), if any. A tool that ignores both is
 * not waited for past them: the turn fails with their reason.
 */
export type AgentTool = (args: unknown, context: AgentToolContext) => unknown | Promise<unknown>

export interface AgentToolContext {
  key: string
  turn: number
  /** Aborted, with its reason, when the run's deadline ends or its signal aborts, or the run fails (its error). */
  signal: AbortSignal
  /** The run's deadline, if it has one. */
  deadline: Deadline | undefined
}

export interface RunTurnsOptions {
  /**
   * Identifies the whole agent run (a conversation turn, a job id). Tool keys
   * and model-call keys derive from it, so running it again after a failure
   * finds the tools that already ran instead of running them again.
   */
  operationId: string
  /** The history to start from. */
  messages: ChatMessage[]
  /**
   * One model call (usually `callModel`, passing `idempotencyKey` and
   * `signal` on). `lastTurn` is true on turn `maxTurns`: tools asked for
   * then are not run (nothing would read their results), so a caller may
   * ask for an answer without tools (`extra: { tool_choice: 'none' }`).
   * `signal` is the one tools get: it aborts when the run's deadline ends or
   * its `signal` aborts, or when the run fails for a reason of its own (the
   * error it rejects with as the reason). A call still running then is no
   * longer waited for. It must resolve to the `ChatResponse`: a streamed
   * `callModel`'s `ModelStream` is refused (a `TypeError`) — return
   * `stream.result`, or call without `stream: true`.
   */
  call: (
    messages: ChatMessage[],
    info: { turn: number; idempotencyKey: string; lastTurn: boolean; signal: AbortSignal },
  ) => Promise<ChatResponse>
  /** Tools by name. A call to an unknown tool gets an error result, not an exception. */
  tools: Readonly<Record<string, AgentTool>>
  /** The hard circuit breaker: model calls per run, ≥ 1 (`Infinity`: none). Default 10. */
  maxTurns?: number | undefined
  /**
   * Where completed tool runs, and the model's answers that asked for them, are remembered.
   * Default: `sideEffect`'s in-memory store (the process's last 10 000
   * completed runs).
   */
  store?: SideEffectStore | undefined
  /**
   * Bounds the run: no model call starts once it has ended, and a tool or a
   * model call still running when it ends is no longer waited for — the run
   * rejects with its reason (`call` is also bounded by its own, usually the
   * same `currentDeadline()`). Default: `currentDeadline()`; `false` = none,
   * not even the ambient one (as in core), for the tools and `call` too.
   */
  deadline?: Deadline | false | undefined
  /** Ends the run as `deadline` does, with the signal's reason. */
  signal?: AbortSignal | undefined
}

export interface TurnsResult {
  /** The last answer (without tool calls). */
  response: ChatResponse
  /** The history with every turn, tool results included. */
  messages: ChatMessage[]
  turns: number
}

/**
 * The agent loop: call the model, run the tools it asks for, hand the
 * results back, until it answers without tool calls or `maxTurns` trips
 * (`MaxTurnsExceededError`). Each tool runs through `sideEffect` under a key
 * derived from the operation, the turn, the tool and its arguments — never
 * the attempt — and each answer whose tool calls run under one of the
 * operation, the turn and the history it answers, so a retried turn (or a
 * retried run) reads the answer the tools ran for and does not send the
 * email twice.
 */
export async function runTurns(options: RunTurnsOptions): Promise<TurnsResult> {
  // `maxTurn: 3` left the breaker at 10 turns, each a paid model call.
  refuseUnknownNames(options, RUN_TURNS_OPTION_NAMES, 'runTurns()')
  checkBounds('runTurns', options)
  // A prompt string (`messages: 'hi'`) was spread into one "message" per
  // character and handed to `call`; no array at all failed as "options.messages
  // is not iterable", naming neither the option nor the function.
  if (!Array.isArray(options.messages)) {
    throw optionError(
      'runTurns: messages',
      'an array of messages ({ role, content })',
      options.messages,
    )
  }
  // NaN would end the loop before the first turn with "exceeded NaN turns":
  // refused, naming it, as withRepair refuses a NaN maxRepairs.
  notNaN('runTurns', 'maxTurns', options.maxTurns)
  // 0 or a negative count used to mean 1: a caller passing what is left of
  // its own turn budget got a model call it had none left for.
  if (options.maxTurns !== undefined && !(options.maxTurns >= 1)) {
    throw optionError('runTurns: maxTurns', 'a number ≥ 1 (Infinity: no breaker)', options.maxTurns)
  }
  // Every key derives from it: a missing one (`undefined`, dropped from the
  // key like any undefined part) gave every run of the process the same
  // keys, so another conversation's identical tool call got the first one's
  // remembered result — its email never sent, its model told it was.
  if (typeof options.operationId !== 'string' || options.operationId === '') {
    throw optionError(
      'runTurns: operationId',
      'a non-empty string (the run’s own id)',
      options.operationId,
    )
  }
  checkToolsAndCall(options)
  const maxTurns = Math.max(1, Math.floor(options.maxTurns ?? 10))
  const messages = [...options.messages]
  // `signal: null` is none (it failed reading `null.aborted`).
  const run = new RunBounds(callDeadline(options.deadline), options.signal ?? undefined)
  try {
    // `false`: none through the whole run — the tools (`sideEffect`, given
    // the run's none as undefined, read the ambient one) and `call` too.
    return await shadowAmbientIfFalse(options.deadline, () =>
      turns(options, run, maxTurns, messages),
    )
  } catch (error) {
    // What `call` and the tools started with the run's signal stops with
    // the run: a streamed answer handed back unawaited went on generating
    // (and billing) after the run had rejected.
    run.fail(error)
    throw error
  } finally {
    run.dispose()
  }
}

const RUN_TURNS_OPTION_NAMES: ReadonlySet<string> = new Set(
  Object.keys({
    operationId: true,
    messages: true,
    call: true,
    tools: true,
    maxTurns: true,
    store: true,
    deadline: true,
    signal: true,
  } satisfies Record<keyof RunTurnsOptions, true>),
)

/**
 * A tool that is no function (an SDK's tool object passed for its function)
 * reached the model as that tool's failure ("tool is not a function"), after
 * a paid model call, and the run went on as if the tool had failed; a
 * missing `tools` threw "Cannot convert undefined or null to object" once the
 * model asked for one. The caller's mistake: refused before any model call.
 */
function checkToolsAndCall(options: RunTurnsOptions): void {
  if (typeof options.call !== 'function') {
    throw optionError('runTurns: call', 'a function (messages, info) → ChatResponse', options.call)
  }
  const tools: unknown = options.tools
  if (typeof tools !== 'object' || tools === null || Array.isArray(tools)) {
    throw optionError('runTurns: tools', 'an object of tool name → function ({} for none)', tools)
  }
  // Every own key, as `runTool` finds a tool (`Object.entries` skipped a
  // non-enumerable one, which then failed as "tool is not a function").
  for (const name of Object.getOwnPropertyNames(tools)) {
    const tool = (tools as Record<string, unknown>)[name]
    if (typeof tool !== 'function') {
      throw optionError(`runTurns: tools["${name}"]`, 'a function (args, context)', tool)
    }
  }
}

async function turns(
  options: RunTurnsOptions,
  run: RunBounds,
  maxTurns: number,
  messages: ChatMessage[],
): Promise<TurnsResult> {
  for (let turn = 1; turn <= maxTurns; turn++) {
    // A run its caller gave up on (the signal aborted, the deadline spent)
    // kept calling the model: a turn whose tool calls were all unknown or
    // unreadable reached no tool to notice, so an aborted run paid for every
    // remaining turn and ended in `MaxTurnsExceededError`, not its reason.
    run.throwIfEnded()
    const response = await answer(options, run, turn, maxTurns, messages)
    const calls = response.content.filter((b) => b.type === 'tool_call')
    messages.push({ role: 'assistant', content: response.content })
    if (calls.length === 0) return { response, messages, turns: turn }
    // The breaker trips now: tools run on the last turn would have side
    // effects (an email sent) whose results no model call ever reads. They
    // stay pending in the history the error carries.
    if (turn === maxTurns) break
    const results: ContentBlock[] = []
    const cut = cutBeforeArguments(response)
    for (const call of calls) {
      results.push(
        call === cut
          ? {
              type: 'tool_result',
              toolCallId: call.id,
              content:
                'the answer was cut at its token limit before this call was finished; the tool was not run',
              isError: true,
            }
          : await runTool(options, run, turn, call),
      )
    }
    // None of them ran (refused for it, or for an unknown tool, unreadable
    // arguments): back in the history as read, see `withoutText`, or in a
    // form JSON can write, see `writtenFinite`.
    if (calls.some((c) => rewrittenByReading(c) || beyondJSON(c))) {
      messages[messages.length - 1] = {
        role: 'assistant',
        content: response.content.map((b) =>
          beyondJSON(b) ? writtenFinite(b) : rewrittenByReading(b) ? withoutText(b) : b,
        ),
      }
    }
    messages.push({ role: 'tool', content: results })
  }
  throw new MaxTurnsExceededError(maxTurns, messages)
}

/**
 * The model's answer on `turn`, remembered as a tool's result is when a
 * tool runs on it (`runnable`; not on the last turn, not in a run without
 * tools): under a key of the operation, the turn and the history it
 * answers. A run of the
 * operation again (after a failure) reads the answer the first run acted
 * on, so its tool calls — and their keys — are the ones that already ran:
 * asked again, a model words them anew (an email's body), their keys
 * differ, and the email was sent twice. A history that differs (a tool that
 * failed, and ran again with another result) asks the model again.
 */
async function answer(
  options: RunTurnsOptions,
  run: RunBounds,
  turn: number,
  maxTurns: number,
  messages: ChatMessage[],
): Promise<ChatResponse> {
  // No tool can run on this answer — a run without tools, or the last turn,
  // whose tool calls the breaker leaves pending: nothing to protect, so the
  // store is neither read nor written. Remembered, a run without tools
  // waited on a store that never answered (a Redis client queueing while
  // Redis is down) until its deadline, and a retried operation replayed
  // the last turn's answer, or `MaxTurnsExceededError`, for a day.
  // Counted as `runTool` finds a tool (own keys, enumerable or not).
  const remembered = turn < maxTurns && Object.getOwnPropertyNames(options.tools).length > 0
  // The request is the history: another history (a tool that failed, then
  // answered on a rerun) is another request, and gets another key — sent
  // under the same one, a server that honours Idempotency-Key replays the
  // first request's answer or refuses the key reused with another payload
  // (422). The same history keeps its key. Made where the answer is
  // remembered, which hashes the history anyway: on the last turn or in a
  // run without tools the key is the operation's and the turn's, as hashing
  // a history of megabytes (an image) every turn blocked the loop for
  // hundreds of ms. One the key cannot be made of (a BigInt a caller put in
  // it) gets the operation's and the turn's too.
  const historyId = remembered ? historyKey(options.operationId, turn, messages) : undefined
  const ask = async () => {
    const response = await options.call([...messages], {
      turn,
      idempotencyKey: historyId ?? idempotencyKey({ operation: options.operationId, turn }),
      lastTurn: turn === maxTurns,
      signal: run.signal,
    })
    // Read as a response, anything else failed on `.content` with a bare
    // "Cannot read properties of undefined (reading 'filter')". Thrown, it
    // is not remembered.
    if (!isChatResponse(response)) {
      const refused = notAResponse('runTurns', response, `turn ${turn}`)
      // Told to stop through the signal it was handed too (`run.fail`), but
      // a call that did not pass that signal on left its stream generating.
      cancelUnread(response, refused)
      throw refused
    }
    return response
  }
  const bounds = { deadline: run.deadline, signal: options.signal }
  if (!remembered) return untilEnded(ask(), bounds)
  const key = historyId
  // A history no key can be made of (a BigInt a caller put in it) is asked, not remembered.
  if (key === undefined) return untilEnded(ask(), bounds)
  try {
    // Only an answer whose tool calls run is remembered: a final answer
    // (text the caller may reject — a refusal, a filtered or invalid one) is
    // handed out, not kept, and a retry asks again. Thrown past `sideEffect`
    // (which remembers no throw; callers joining the call share it).
    const remembered = await sideEffect<RememberedAnswer | ChatResponse>(
      key,
      async () => {
        const response = await ask()
        // The call `turns` refuses as cut runs nothing either: remembered,
        // a rerun with a larger cap replayed it and refused it again.
        const cut = cutBeforeArguments(response)
        if (
          !response.content.some((b) => b.type === 'tool_call' && b !== cut && runnable(options, b))
        ) {
          throw new Unremembered(response)
        }
        // With the cut call named beside it, and its numbers beyond JSON's
        // range: neither its mark nor an Infinity survives a store outside
        // the process (`rememberAnswer`).
        return rememberAnswer(response, cut)
      },
      { store: options.store, ...bounds },
    )
    return replayAnswer(remembered, options.operationId, turn)
  } catch (error) {
    // `isInstance`: `call` may reject, and a caller's signal abort, with a revoked Proxy.
    if (isInstance(error, Unremembered)) return error.response
    // A store that cannot be read did not call the model: asked without
    // it, as before answers were remembered — the run fails at its first
    // tool with this error, if the model asks for one.
    if (!isSideEffectStoreError(error)) throw error
    run.throwIfEnded()
    const response = await untilEnded(ask(), bounds)
    const cut = cutBeforeArguments(response)
    if (
      !response.content.some((b) => b.type === 'tool_call' && b !== cut && runnable(options, b))
    ) {
      return response
    }
    // Its tools run only once the store has been read again and handed the
    // answer (its write, as every record's, is not awaited: see sideEffect):
    // a read that failed once (a Redis blip) and worked by the tool's ran
    // the tool on an answer the store was never given, and a rerun asked the
    // model again, which worded the email anew — another key, the email sent
    // twice. Still unreadable, this is the SideEffectStoreError the run
    // fails with, before any tool runs; an answer another run remembered
    // meanwhile is the one acted on.
    const kept = await sideEffect<RememberedAnswer | ChatResponse>(
      key,
      () => rememberAnswer(response, cut),
      { store: options.store, ...bounds },
    )
    return replayAnswer(kept, options.operationId, turn)
  }
}

/**
 * A call `runTool` runs: a known tool, arguments that read as JSON and
 * lose no integer. An answer whose calls are none of these ran nothing — a
 * call cut at `maxTokens` mid-arguments, an unknown tool —, and a retry
 * (with a larger cap, say) asks again rather than replaying it.
 */
function runnable(
  options: RunTurnsOptions,
  call: Extract<ContentBlock, { type: 'tool_call' }>,
): boolean {
  return (
    Object.hasOwn(options.tools, call.name) &&
    unreadableArguments(call) === undefined &&
    !roundedByReading(call) &&
    !beyondJSON(call)
  )
}

/** An answer no tool runs on, handed through `sideEffect` unremembered. */
class Unremembered {
  constructor(readonly response: ChatResponse) {}
}

/** The key a turn's answer is remembered under, or undefined when `messages` cannot be written as JSON. */
function historyKey(operation: string, turn: number, messages: ChatMessage[]): string | undefined {
  try {
    return idempotencyKey({ operation, turn, history: messages })
  } catch {
    return undefined
  }
}

async function runTool(
  options: RunTurnsOptions,
  run: RunBounds,
  turn: number,
  call: Extract<ContentBlock, { type: 'tool_call' }>,
): Promise<ContentBlock> {
  const tool = Object.hasOwn(options.tools, call.name) ? options.tools[call.name] : undefined
  if (tool === undefined) {
    return {
      type: 'tool_result',
      toolCallId: call.id,
      content: `unknown tool "${call.name}"`,
      isError: true,
    }
  }
  // Arguments that are not JSON are a call the model never finished — cut
  // at `maxTokens` mid-call (a streamed answer, which is not recovered), or
  // garbled: running it would act on a fragment (an email of "I qu"). The
  // model reads why instead, and may call again.
  const unreadable = unreadableArguments(call)
  if (unreadable !== undefined) {
    return {
      type: 'tool_result',
      toolCallId: call.id,
      content: `the arguments of this call are not valid JSON (${unreadable}); the tool was not run`,
      isError: true,
    }
  }
  // Parsing rounded an integer past 2^53 (an order id): run, the tool would
  // act on another number than the model wrote — refund order …992 for
  // …993 — and two calls that differ only there shared one key, so the
  // second read the first's result. The model reads why, and may call again.
  // Told from the text where there is one (OpenAI's wire; Anthropic's and
  // Gemini's where reading changed it): an integer literal that reads, or is
  // written again, as other digits — an id `1859312345678901248` is a double
  // exactly, but `/tweets/${id}` said `…901200` —, not a `1e20` the tool
  // takes as a number. Without text (Anthropic's and Gemini's, parsed with
  // the body), a value past 2^53 may have been rounded, and is refused.
  if (roundedByReading(call)) {
    return {
      type: 'tool_result',
      toolCallId: call.id,
      content:
        'the arguments of this call hold an integer beyond ±2^53, which reading them, or writing it again, changes; the tool was not run (pass such a number as a string)',
      isError: true,
    }
  }
  // Read as a number JSON cannot write (`{"t":1e999}` → Infinity): run, the
  // tool acted on Infinity, and the next turn's request, which writes the
  // call again, was refused on Anthropic's and Gemini's wire — the side
  // effect done, the run dead. The model reads why, as for a rounded integer.
  const nonFinite = nonFiniteIn(call.arguments)
  if (nonFinite !== undefined) {
    return {
      type: 'tool_result',
      toolCallId: call.id,
      content: `the arguments of this call hold a number beyond JSON's range (${nonFinite.value}${nonFinite.path === '' ? '' : ` at ${nonFinite.path.replace(/^\./, '')}`}); the tool was not run (pass such a number as a string)`,
      isError: true,
    }
  }
  // The model's call id changes when a turn is re-generated; the operation, turn, tool and arguments do not.
  let key: string
  try {
    key = idempotencyKey({
      operation: options.operationId,
      turn,
      tool: call.name,
      args: call.arguments,
    })
  } catch (error) {
    // Arguments JSON reads and writes, nested deeper than the key's writer
    // recurses (a few thousand levels): the run failed with a bare
    // "RangeError: Maximum call stack size exceeded" after a paid call.
    return {
      type: 'tool_result',
      toolCallId: call.id,
      content: `the arguments of this call cannot be made into its key (${describeThrown(error)}); the tool was not run`,
      isError: true,
    }
  }
  let value: unknown
  try {
    // Waited for no longer than the run's deadline and signal; a run of the
    // same key still in progress (an earlier, timed-out run of this
    // operation) is joined, not started again.
    value = await sideEffect(
      key,
      (k) => tool(call.arguments, { key: k, turn, signal: run.signal, deadline: run.deadline }),
      { store: options.store, deadline: run.deadline, signal: options.signal },
    )
  } catch (error) {
    // The run's own end is no tool error for the model to read: the turn
    // fails with its reason (what the tool threw, honouring the signal, too).
    run.throwIfEnded()
    // Nor is a store that could not be read: the tool did not run. Handed to
    // the model, the store's error (a Redis address, a driver's wording) read
    // as the tool's failure, and the run answered as if the tool had failed.
    if (isSideEffectStoreError(error)) throw error
    return {
      type: 'tool_result',
      toolCallId: call.id,
      content: describeThrown(error),
      isError: true,
    }
  }
  // Outside the `try`: the tool ran (the email is sent) whatever its value
  // turns out to be. A value JSON cannot carry (a BigInt id, a circular
  // SDK object) was reported as the tool's error — the model then called it
  // again — and a re-run got the same remembered value, and the same error.
  return { type: 'tool_result', toolCallId: call.id, content: resultContent(value) }
}

/**
 * A tool's value as the text the model reads: a string as it is, anything
 * else as JSON, with what JSON cannot carry written so that it still says
 * the tool completed — a BigInt as its decimal string, a circular reference
 * as `"[Circular]"`; `undefined`, a function or a symbol as `null` (as
 * `JSON.stringify` drops them in an object), never a missing `content`.
 */
function resultContent(value: unknown): string {
  if (typeof value === 'string') return value
  try {
    const text = JSON.stringify(value, jsonSafe()) ?? 'null'
    // An object JSON writes as a string (a Date, a MongoDB ObjectId, a URL:
    // their `toJSON`) is that string, as a store outside the process (JSON)
    // gives it back on a rerun: quoted here and bare there, the history
    // differed, the next turn's remembered answer was not found, and the
    // model, asked again, worded its call anew — the email sent twice.
    return typeof value === 'object' && value !== null && text.startsWith('"')
      ? (JSON.parse(text) as string)
      : text
  } catch (error) {
    // A `toJSON` or getter that throws: the tool still completed.
    return `the tool completed, but its result could not be written as JSON (${describeThrown(error)})`
  }
}

/** A `JSON.stringify` replacer for BigInt and circular references. */
function jsonSafe(): (this: unknown, key: string, value: unknown) => unknown {
  // The objects on the path from the root to the value being written.
  const path: unknown[] = []
  return function (this: unknown, _key, value) {
    if (typeof value === 'bigint') return value.toString()
    if (typeof value !== 'object' || value === null) return value
    // `this` is the object holding `value`: drop the path below it.
    while (path.length > 0 && path.at(-1) !== this) path.pop()
    if (path.includes(value)) return '[Circular]'
    path.push(value)
    return value
  }
}

/**
 * `describeError`, never empty and never throwing. An error without a
 * message — Node's `AggregateError` for a connection refused on every
 * address of a host, an `Error()` — gave the model an empty tool result to
 * read: it is named by its code and its inner errors instead.
 */
function describeThrown(error: unknown): string {
  try {
    const text = describeError(error)
    if (text.trim() !== '') return text
    const inner = (error as { errors?: unknown }).errors
    const details = Array.isArray(inner) ? inner.slice(0, 5).map(describeThrown).join('; ') : ''
    return details === ''
      ? `the tool failed (${errorCode(error)})`
      : `${errorCode(error)}: ${details}`
  } catch {
    return 'the tool failed with a value that cannot be described'
  }
}

/**
 * The run's deadline and signal, and the one signal `call` and the tools get
 * for both — and for the run's own failure (`fail`): made when first asked
 * for, unlinked when the run ends.
 */
class RunBounds {
  readonly deadline: Deadline | undefined
  readonly #signal: AbortSignal | undefined
  #controller: AbortController | undefined
  readonly #unlink: Array<() => void> = []

  constructor(deadline: Deadline | undefined, signal: AbortSignal | undefined) {
    this.deadline = deadline
    this.#signal = signal
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController()
      this.#controller = controller
      // Aborted by the deadline or the signal, with its reason, as by `fail`.
      // The deadline heard through `onDone` (at once when it has ended), not
      // an abort listener on its signal: a dozen runs under one request's
      // deadline added one each, and Node warned of an EventTarget leak
      // (MaxListenersExceededWarning), as guard's did.
      if (this.deadline !== undefined) {
        this.#unlink.push(this.deadline.onDone((reason) => controller.abort(reason)))
      }
      const source = this.#signal
      if (source !== undefined && !controller.signal.aborted) {
        if (source.aborted) controller.abort(source.reason)
        // Through core's one listener per signal, for the same reason.
        else this.#unlink.push(hearAbort(source, () => controller.abort(source.reason)))
      }
    }
    return this.#controller.signal
  }

  /** The run rejects with `reason`: what it started with `signal` is told to stop. */
  fail(reason: unknown): void {
    if (this.#controller !== undefined && !this.#controller.signal.aborted) {
      this.#controller.abort(reason)
    }
  }

  /** Throws the signal's reason, or the deadline's, once either has ended. */
  throwIfEnded(): void {
    if (this.#signal?.aborted) throw this.#signal.reason
    this.deadline?.throwIfExpired()
  }

  dispose(): void {
    for (const unlink of this.#unlink.splice(0)) unlink()
  }
}

/**
 * Whether reading a call's arguments changed an integer in them (see
 * `runTool`). Told from the text where there is one (OpenAI's wire, and
 * Anthropic's or Gemini's where reading changed it: `rawArguments`); from
 * the value past 2^53 where there is none.
 */
function roundedByReading(call: Extract<ContentBlock, { type: 'tool_call' }>): boolean {
  return call.rawArguments !== undefined
    ? rewrittenByReading(call)
    : typeof call.arguments === 'object' &&
        call.arguments !== null &&
        holdsUnsafeInteger(call.arguments)
}

/** A tool call whose text holds an integer that reading it changed (`rewritesAnInteger`). */
function rewrittenByReading(block: ContentBlock): boolean {
  return (
    block.type === 'tool_call' &&
    block.rawArguments !== undefined &&
    rewritesAnInteger(block.rawArguments)
  )
}

/**
 * A call refused for its rounded arguments goes back in the history as read,
 * without the text that says what the model wrote: the tool was not run and
 * its result says why, while Anthropic and Gemini, which take arguments only
 * as an object, refuse that text in a request (it would reach them rounded,
 * `InvalidChatRequestError`) — so the run's next turn failed instead of the
 * model reading why and calling again. Kept when the object cannot be
 * written (nested too deep): the next turn's typed refusal, not a RangeError.
 * A call left pending when the breaker trips keeps its text: whoever
 * finishes it needs what the model wrote.
 */
function withoutText(block: ContentBlock): ContentBlock {
  if (block.type !== 'tool_call' || argumentsText(block.arguments) === undefined) return block
  const { rawArguments: _, ...read } = block
  return read
}

/** A tool call whose arguments read as a number JSON cannot write (`nonFiniteIn`): `1e999`. */
function beyondJSON(block: ContentBlock): boolean {
  return block.type === 'tool_call' && nonFiniteIn(block.arguments) !== undefined
}

/**
 * A call refused for a number beyond JSON's range goes back in the history
 * with that number as its text (`"Infinity"`) and without the text the model
 * wrote: no wire can send the number (JSON writes it as null, which the
 * request check refuses), and Anthropic and Gemini refuse the text. Kept
 * when the value cannot be written (nested too deep): the next turn's typed
 * refusal, not a RangeError.
 */
function writtenFinite(block: ContentBlock): ContentBlock {
  if (block.type !== 'tool_call') return block
  let args: unknown
  try {
    args = JSON.parse(
      JSON.stringify(block.arguments, (_key, value: unknown) =>
        typeof value === 'number' && !Number.isFinite(value) ? String(value) : value,
      ),
    )
  } catch {
    return block
  }
  const { rawArguments: _, ...read } = block
  return { ...read, arguments: args }
}

/**
 * Why a tool call's arguments are not JSON, or undefined when they are. They
 * arrive as text, kept as it came when it does not parse (`parseArguments`);
 * text that parsed is an object (or, as the model sent it, another JSON value).
 */
function unreadableArguments(
  call: Extract<ContentBlock, { type: 'tool_call' }>,
): string | undefined {
  if (typeof call.arguments !== 'string') return undefined
  const text = call.rawArguments ?? call.arguments
  if (text.trim() === '') return undefined
  try {
    JSON.parse(text)
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}
