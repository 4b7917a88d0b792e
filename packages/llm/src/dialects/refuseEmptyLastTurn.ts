import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import type { ChatMessage } from '../types.js'

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
}
