import { randomBytes } from 'node:crypto'

/**
 * JSON text to be sent exactly as written inside a JSON body: tool-call
 * arguments scripted as `argumentsJson`. Parsed and serialised again, an
 * integer past 2^53 (`12345678901234567890`) would arrive rounded
 * (`12345678901234567000`), which is the very thing `argumentsJson` exists
 * to send. Serialise a body holding these with `stringifyWithRaw`.
 */
export class RawJson {
  readonly text: string

  /** `where` names the value in the error, e.g. `Anthropic's unstreamed tool_use input`. */
  constructor(text: string, where: string) {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      value = undefined
    }
    // Spliced into a JSON body, malformed text would make the whole answer
    // unreadable — not a provider that sent bad arguments, which only a
    // format carrying them as a string (OpenAI's `arguments`, Anthropic's
    // streamed `partial_json`) can show.
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new TypeError(
        `reply toolCalls: argumentsJson ${JSON.stringify(text.slice(0, 80))} is not a JSON object, and ${where} is one inside the JSON body; malformed arguments can be sent only where they travel as text (OpenAI-style \`arguments\`, Anthropic's streamed \`partial_json\`)`,
      )
    }
    this.text = text
  }
}

/** `JSON.stringify`, with each `RawJson` written as its text, byte for byte. */
export function stringifyWithRaw(value: unknown): string {
  const raws: string[] = []
  const tag = `hourglass-raw-json-${randomBytes(8).toString('hex')}-`
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (!(v instanceof RawJson)) return v
    raws.push(v.text)
    return `${tag}${raws.length - 1}`
  })
  if (raws.length === 0) return text
  return text.replace(new RegExp(`"${tag}(\\d+)"`, 'g'), (_m, i: string) => raws[Number(i)]!)
}
