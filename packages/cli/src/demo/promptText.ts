/**
 * The text a demo service reads from a JSON body's `question` or `prompt`: a
 * string as sent, none as '', any other JSON value as its JSON text.
 * `String()` threw on an object with no usable `toString`
 * (`{"question":{"toString":1}}`, typed at the curl commands `demo --serve`
 * prints): the api service's handler failed, Express printed its stack on
 * the demo's terminal, and the toolkit edge answered the caller with an HTML
 * page holding a stack trace and this machine's file paths.
 */
export function promptText(value: unknown): string {
  if (typeof value === 'string') return value
  if (value === undefined || value === null) return ''
  // A parsed JSON value: no cycles, no BigInt, so this cannot throw.
  return JSON.stringify(value)
}
