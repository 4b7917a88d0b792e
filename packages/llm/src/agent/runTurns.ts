import { currentDeadline, type Deadline } from '@hourglass/core'
import { describeError } from '../errors/describeError.js'
import { MaxTurnsExceededError } from '../errors/MaxTurnsExceededError.js'
import { notNaN } from '../retry/checkNumber.js'
import type { ChatMessage, ChatResponse, ContentBlock } from '../types.js'
import { idempotencyKey } from './idempotencyKey.js'
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
  /** Aborted, with its reason, when the run's deadline ends or its signal aborts. */
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
   * One model call (usually `callModel`, passing `idempotencyKey` on).
   * `lastTurn` is true on turn `maxTurns`: tools asked for then are not run
   * (nothing would read their results), so a caller may ask for an answer
   * without tools (`extra: { tool_choice: 'none' }`).
   */
  call: (
    messages: ChatMessage[],
    info: { turn: number; idempotencyKey: string; lastTurn: boolean },
  ) => Promise<ChatResponse>
  /** Tools by name. A call to an unknown tool gets an error result, not an exception. */
  tools: Readonly<Record<string, AgentTool>>
  /** The hard circuit breaker: model calls per run. Default 10. */
  maxTurns?: number | undefined
  /**
   * Where completed tool runs are remembered. Default: `sideEffect`'s
   * in-memory store (the process's last 10 000 completed runs).
   */
  store?: SideEffectStore | undefined
  /**
   * Bounds the tools (`call` is bounded by its own, usually the same
   * `currentDeadline()`): a tool still running when it ends is no longer
   * waited for, and the run rejects with its reason. Default: `currentDeadline()`.
   */
  deadline?: Deadline | undefined
  /** Aborts the tools as `deadline` does, and the run with its reason. */
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
 * the attempt — so a retried turn (or a retried run) does not send the email
 * twice.
 */
export async function runTurns(options: RunTurnsOptions): Promise<TurnsResult> {
  // NaN would end the loop before the first turn with "exceeded NaN turns":
  // refused, naming it, as withRepair refuses a NaN maxRepairs.
  notNaN('runTurns', 'maxTurns', options.maxTurns)
  const maxTurns = Math.max(1, Math.floor(options.maxTurns ?? 10))
  const messages = [...options.messages]
  const run = new RunBounds(options.deadline ?? currentDeadline(), options.signal)
  try {
    return await turns(options, run, maxTurns, messages)
  } finally {
    run.dispose()
  }
}

async function turns(
  options: RunTurnsOptions,
  run: RunBounds,
  maxTurns: number,
  messages: ChatMessage[],
): Promise<TurnsResult> {
  for (let turn = 1; turn <= maxTurns; turn++) {
    const response = await options.call([...messages], {
      turn,
      idempotencyKey: idempotencyKey({ operation: options.operationId, turn }),
      lastTurn: turn === maxTurns,
    })
    const calls = response.content.filter((b) => b.type === 'tool_call')
    messages.push({ role: 'assistant', content: response.content })
    if (calls.length === 0) return { response, messages, turns: turn }
    // The breaker trips now: tools run on the last turn would have side
    // effects (an email sent) whose results no model call ever reads. They
    // stay pending in the history the error carries.
    if (turn === maxTurns) break
    const results: ContentBlock[] = []
    for (const call of calls) {
      results.push(await runTool(options, run, turn, call))
    }
    messages.push({ role: 'tool', content: results })
  }
  throw new MaxTurnsExceededError(maxTurns, messages)
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
  // The model's call id changes when a turn is re-generated; the operation, turn, tool and arguments do not.
  const key = idempotencyKey({
    operation: options.operationId,
    turn,
    tool: call.name,
    args: call.arguments,
  })
  try {
    // Waited for no longer than the run's deadline and signal; a run of the
    // same key still in progress (an earlier, timed-out run of this
    // operation) is joined, not started again.
    const value = await sideEffect(
      key,
      (k) => tool(call.arguments, { key: k, turn, signal: run.signal, deadline: run.deadline }),
      { store: options.store, deadline: run.deadline, signal: options.signal },
    )
    const content = typeof value === 'string' ? value : JSON.stringify(value ?? null)
    return { type: 'tool_result', toolCallId: call.id, content }
  } catch (error) {
    // The run's own end is no tool error for the model to read: the turn
    // fails with its reason (what the tool threw, honouring the signal, too).
    run.throwIfEnded()
    return {
      type: 'tool_result',
      toolCallId: call.id,
      content: describeError(error),
      isError: true,
    }
  }
}

/**
 * The run's deadline and signal, and the one signal a tool gets for both:
 * made when a tool first asks for it, released when the run ends.
 */
class RunBounds {
  readonly deadline: Deadline | undefined
  readonly #signal: AbortSignal | undefined
  #both: Deadline | undefined

  constructor(deadline: Deadline | undefined, signal: AbortSignal | undefined) {
    this.deadline = deadline
    this.#signal = signal
  }

  get signal(): AbortSignal {
    if (this.deadline === undefined) return this.#signal ?? new AbortController().signal
    if (this.#signal === undefined) return this.deadline.signal
    // A child of the deadline that also follows the signal: aborted by either.
    this.#both ??= this.deadline.child(Number.POSITIVE_INFINITY, { signal: this.#signal })
    return this.#both.signal
  }

  /** Throws the signal's reason, or the deadline's, once either has ended. */
  throwIfEnded(): void {
    if (this.#signal?.aborted) throw this.#signal.reason
    this.deadline?.throwIfExpired()
  }

  dispose(): void {
    this.#both?.dispose()
  }
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
