import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import type { ChatMessage } from '../types.js'
import { blocksOf } from './blocks.js'
import { isBlank } from './isBlank.js'

/**
 * Anthropic's and Gemini's builders drop a message with nothing to send
 * (Anthropic answers 400 to empty text). A user or tool message dropped at
 * the end leaves the assistant's turn last, and both providers read a
 * conversation that ends with the assistant as a prefill: the model
 * continues "its" words instead of answering (Anthropic's own API answers
 * 400 to the empty turn). So the last sent turn being the assistant's while
 * the caller's last message is not is refused, naming that message. An
 * empty turn earlier (merged into its neighbours) or an empty last
 * assistant turn (nothing to continue: the model answers) keeps the
 * conversation's meaning, and goes.
 */
export function refuseEmptyLastTurn(
  messages: readonly ChatMessage[],
  lastSent: number,
  provider: string,
): void {
  // The last message the builder sent anything of: an empty assistant
  // message after it was dropped too, so it is no turn that ends the
  // conversation.
  if (messages[lastSent]?.role !== 'assistant') return
  for (let i = messages.length - 1; i > lastSent; i--) {
    const message = messages[i]
    if (message === undefined || message.role === 'system' || message.role === 'assistant') continue
    throw new InvalidChatRequestError(
      `messages[${i}].content`,
      `${provider} takes no empty last ${message.role} message: left out, the assistant's turn before it would come last, and ${provider} continues that turn instead of answering`,
    )
  }
  // A system (or developer) message after that turn goes to the top-level
  // system text, which has no place in the turns: the assistant's turn is
  // then last all the same, and read as a prefill — the model continued its
  // words instead of following the instruction (Claude 4.6 and later were
  // refused "a last message of the assistant"). Blank text says nothing.
  for (let i = lastSent + 1; i < messages.length; i++) {
    const message = messages[i]
    if (message?.role !== 'system') continue
    if (blocksOf(message).every((b) => b.type !== 'text' || isBlank(b.text))) continue
    throw new InvalidChatRequestError(
      `messages[${i}].role`,
      `${provider} has no system turn: a system message after the assistant's last turn goes to the system instructions, which leaves the assistant's turn last, and ${provider} continues that turn instead of answering; send it as a user message, or before the assistant's turn`,
    )
  }
}
