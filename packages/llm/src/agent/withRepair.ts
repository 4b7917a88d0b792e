import { cutText, endedBy, isAbortError, optionError } from '@hourglass/core'
import { refuseUnknownNames } from '../call/unknownOptionNames.js'
import { describeError } from '../errors/describeError.js'
import { RepairFailedError } from '../errors/RepairFailedError.js'
import { wholeNumberUpTo } from '../retry/checkNumber.js'
import type { ChatMessage, ChatResponse, ContentBlock } from '../types.js'
import { cancelUnread, isChatResponse, notAResponse } from './notAResponse.js'

/** One model call over a given history. `repair` is 0 for the first call, then 1, 2, … */
export type RepairableCall = (
  messages: ChatMessage[],
  info: { repair: number },
) => Promise<ChatResponse>

/**
 * Returns the parsed value, or throws (anything) to reject the answer. May be
 * async. A deadline's or a cancel's error (`DeadlineExceededError`,
 * `ClientClosedError`, one in the `cause` chain, an `AbortError`) does not
 * reject the answer: `withRepair` rethrows it.
 */
export type Validate<T> = (response: ChatResponse) => T | Promise<T>

export interface RepairOptions {
  /** The conversation so far. */
  messages: ChatMessage[]
  /**
   * Repair turns after the first answer: a whole number from 0 to 10
   * (`RangeError` otherwise). Default 2; 0 = validate once, no repair.
   */
  maxRepairs?: number | undefined
  /** The user message of a repair turn. Default: names the error and asks for a corrected answer. */
  repairPrompt?: ((error: unknown, repair: number) => string) | undefined
}

const REPAIR_OPTION_NAMES: ReadonlySet<string> = new Set(
  Object.keys({
    messages: true,
    maxRepairs: true,
    repairPrompt: true,
  } satisfies Record<keyof RepairOptions, true>),
)

export interface Repaired<T> {
  value: T
  response: ChatResponse
  /** Repair turns it took (0 = the first answer was valid). */
  repairs: number
  /** The history including every repair turn, ending with the valid answer. */
  messages: ChatMessage[]
}

/** The most repair turns `maxRepairs` may ask for. */
const MAX_REPAIRS = 10

/** Validation messages beyond this are cut: a huge schema dump costs tokens and helps no model. */
const MAX_ERROR_CHARS = 2000

/**
 * Separates the call from the parse. An answer that fails `validate` is not
 * resent blindly — the same request gives a different, equally unchecked
 * answer. It becomes a follow-up turn: the history, the model's previous
 * answer as an assistant message, and a user message carrying the
 * validation error. After `maxRepairs` repair turns, `RepairFailedError`
 * carries every validation error.
 *
 * Transport retries belong inside `call` (`callModel`); this loop only counts
 * answers that arrived and were wrong. The previous answer is replayed as
 * its text and thinking blocks; tool calls are left out, since replaying
 * them would require their results.
 */
export async function withRepair<T>(
  call: RepairableCall,
  validate: Validate<T>,
  options: RepairOptions,
): Promise<Repaired<T>> {
  // Each repair turn is a paid model call. NaN passes every `repair >=
  // maxRepairs` test and Infinity none: the loop would pay without end. A
  // model that ten corrections did not bring to a valid answer is not
  // brought by more (callModel's attempts stop at 10 too), so anything
  // past 10 — or a count that is no whole number — is refused, not read
  // as some other count.
  // `maxRepair: 0` (meaning no repair) paid for three answers: refused, naming the one meant.
  refuseUnknownNames(options, REPAIR_OPTION_NAMES, 'withRepair()')
  // A schema object passed for `validate` failed every answer as "validate
  // is not a function": three paid calls, the model told so twice, then
  // RepairFailedError. A prompt string for `repairPrompt` failed after the
  // first paid call as "prompt is not a function". Refused before any call.
  if (typeof call !== 'function') {
    throw optionError('withRepair: call', 'a function (messages, info) → ChatResponse', call)
  }
  if (typeof validate !== 'function') {
    throw optionError(
      'withRepair: validate',
      'a function (response) → value, throwing to reject the answer',
      validate,
    )
  }
  if (options.repairPrompt != null && typeof options.repairPrompt !== 'function') {
    throw optionError(
      'withRepair: repairPrompt',
      'a function (error, repair) → string',
      options.repairPrompt,
    )
  }
  // As in runTurns: a prompt string was spread into one "message" per character.
  if (!Array.isArray(options.messages)) {
    throw optionError(
      'withRepair: messages',
      'an array of messages ({ role, content })',
      options.messages,
    )
  }
  wholeNumberUpTo('withRepair', 'maxRepairs', options.maxRepairs, MAX_REPAIRS)
  const maxRepairs = options.maxRepairs ?? 2
  const prompt = options.repairPrompt ?? defaultRepairPrompt
  const errors: unknown[] = []
  let messages = [...options.messages]
  for (let repair = 0; ; repair++) {
    const response = await call(messages, { repair })
    // Checked before `validate`: a ModelStream (`callModel` with `stream:
    // true`, or a boolean `stream` its overloads type as a promise) failed
    // validation like a wrong answer, and the repair turn then threw
    // "Cannot read properties of undefined (reading 'filter')" while the
    // stream went on generating, unread. Said as runTurns says it, and the
    // stream is cancelled.
    if (!isChatResponse(response)) {
      const refused = notAResponse(
        'withRepair',
        response,
        repair === 0 ? 'the first call' : `repair ${repair}`,
      )
      cancelUnread(response, refused)
      throw refused
    }
    try {
      const value = await validate(response)
      return { value, response, repairs: repair, messages: [...messages, assistantTurn(response)] }
    } catch (error) {
      // A deadline that ran out, or a cancel, while validating (an async
      // validator awaiting a lookup) says nothing about the answer: it is
      // the caller's end, rethrown as is — counted as a failed validation it
      // became a repair turn, or on the last one a `RepairFailedError` (a
      // 500 instead of the 504 a deadline maps to).
      if (endedBy(error) !== undefined || isAbortError(error)) throw error
      errors.push(error)
      if (repair >= maxRepairs) {
        throw new RepairFailedError({ errors, lastResponse: response, repairs: repair })
      }
      messages = [
        ...messages,
        assistantTurn(response),
        { role: 'user', content: prompt(error, repair + 1) },
      ]
    }
  }
}

function defaultRepairPrompt(error: unknown): string {
  // Never half an emoji: a lone surrogate is no text a client can encode
  // (the provider's request fails on the repair prompt it was sent).
  const text = cutText(describeError(error), MAX_ERROR_CHARS + 1)
  return `Your previous answer failed validation:\n${text}\nReply again with a corrected answer that passes it. Change only what the error requires.`
}

function assistantTurn(response: ChatResponse): ChatMessage {
  const content: ContentBlock[] = response.content.filter(
    (block) => block.type === 'text' || block.type === 'thinking',
  )
  if (!content.some((b) => b.type === 'text')) content.push({ type: 'text', text: response.text })
  return { role: 'assistant', content }
}
