import { quoted } from '@hourglass/core'
import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'

/**
 * `stream_options` for a dialect that streams in its own format: usage comes
 * anyway (`include_usage` is the caller's to show or not), and an answer
 * without obfuscation is what it always sends, so `include_obfuscation:
 * false` asks for nothing. Obfuscation asked for, or any other option,
 * throws `InvalidChatRequestError` naming it. `null` means not set.
 */
export function refuseStreamOptions(value: unknown, provider: string): void {
  if (typeof value !== 'object' || value === null) {
    throw new InvalidChatRequestError('stream_options', `${provider} has no equivalent`)
  }
  for (const key of Object.keys(value)) {
    const option = (value as Record<string, unknown>)[key]
    if (option === null || option === undefined || key === 'include_usage') continue
    if (key === 'include_obfuscation' && option === false) continue
    throw new InvalidChatRequestError(
      key === 'include_obfuscation' ? 'stream_options.include_obfuscation' : 'stream_options',
      key === 'include_obfuscation'
        ? `${provider} has no stream obfuscation (false, what it sends anyway, is accepted)`
        : `${provider} has no equivalent of ${quoted(key, 64)}`,
    )
  }
}
