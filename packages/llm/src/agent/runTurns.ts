import { describeError } from '../errors/describeError.js'
import { MaxTurnsExceededError } from '../errors/MaxTurnsExceededError.js'
import { notNaN } from '../retry/checkNumber.js'
import type { ChatMessage, ChatResponse, ContentBlock } from '../types.js'
import { idempotencyKey } from './idempotencyKey.js'
import type { SideEffectStore } from './SideEffectStore.js'
import { sideEffect } from './sideEffect.js'

/** A tool the model may call. `key` is its operation key: pass it on as an `Idempotency-Key`. */
export type AgentTool = (
  args: unknown,
  context: { key: string; turn: number },
) => unknown | Promise<unknown>

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
  /** Where completed tool runs are remembered. Default: `sideEffect`'s in-memory store. */
  store?: SideEffectStore | undefined
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
      results.push(await runTool(options, turn, call))
    }
    messages.push({ role: 'tool', content: results })
  }
  throw new MaxTurnsExceededError(maxTurns, messages)
}

async function runTool(
  options: RunTurnsOptions,
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
  // The model's call id changes when a turn is re-generated; the operation, turn, tool and arguments do not.
  const key = idempotencyKey({
    operation: options.operationId,
    turn,
    tool: call.name,
    args: call.arguments,
  })
  try {
    const value = await sideEffect(key, (k) => tool(call.arguments, { key: k, turn }), {
      store: options.store,
    })
    const content = typeof value === 'string' ? value : JSON.stringify(value ?? null)
    return { type: 'tool_result', toolCallId: call.id, content }
  } catch (error) {
    return {
      type: 'tool_result',
      toolCallId: call.id,
      content: describeError(error),
      isError: true,
    }
  }
}
