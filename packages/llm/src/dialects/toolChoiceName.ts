import { quoted } from '@hourglass/core'
import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'

/**
 * The function an OpenAI `tool_choice` object forces
 * (`{ "type": "function", "function": { "name": "f" } }`), for a dialect
 * that translates it. Any other key set in the object — at the top or in
 * `function` — throws `InvalidChatRequestError` naming it, rather than being
 * dropped; so does any other kind of choice (`allowed_tools`, `custom`…).
 * `null` means not set.
 */
export function toolChoiceName(value: unknown, provider: string): string {
  const choice = value as { type?: unknown; function?: unknown }
  const fn = choice.function as { name?: unknown } | null | undefined
  if (choice.type !== 'function' || typeof fn?.name !== 'string') {
    throw new InvalidChatRequestError('tool_choice', `${provider} has no equivalent of this choice`)
  }
  refuseOtherKeys(choice, ['type', 'function'], 'tool_choice', provider)
  refuseOtherKeys(fn, ['name'], 'tool_choice.function', provider)
  return fn.name
}

function refuseOtherKeys(
  object: object,
  known: readonly string[],
  path: string,
  provider: string,
): void {
  for (const key of Object.keys(object)) {
    const value = (object as Record<string, unknown>)[key]
    if (known.includes(key) || value === null || value === undefined) continue
    const at = /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${quoted(key, 64)}]`
    throw new InvalidChatRequestError(
      `${path}${at}`,
      `${provider} has no equivalent of this tool_choice field`,
    )
  }
}
