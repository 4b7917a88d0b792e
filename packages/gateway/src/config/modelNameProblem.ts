/**
 * What is wrong with a model or alias name — what clients send as `model`
 * and ask for by `GET /v1/models/{name}` — or undefined when nothing is.
 *
 * The rule is "a name an id can be": any character a client can type and
 * put in a URL path, `/` and `:` included (`provider/model`,
 * `ft:gpt-4o:org:custom:id`), and not these:
 * - `?`, `#`, `%`: the official clients escape them, but a URL written by
 *   hand (curl, a client that does not escape) silently asks for another
 *   name — `GET /v1/models/gpt?x` answered the model `gpt`, and `x%41`
 *   asked for `xA`. (A `/` unescaped asks for no route: a loud 404, and the
 *   official clients send `%2F`, so it is kept.)
 * - `.` or `..` as the name or one of its `/`-parts: URL parsers resolve
 *   them (`/v1/models/.` is the list) and the official clients refuse to
 *   send them, so the model could never be retrieved.
 * - spaces, line breaks, control and invisible formatting characters: no
 *   client types them, and a name that looks like one without them (a
 *   trailing space, a zero-width space) is another model — every request
 *   for what the operator meant is a 404.
 * - an unpaired surrogate (a `\ud800` escape in the JSON): it has no UTF-8
 *   form, so no URL can carry it.
 */
export function modelNameProblem(name: string): string | undefined {
  if (name.split('/').some((part) => part === '.' || part === '..')) {
    return `expected no "." or ".." as the name or a part of it between slashes: URLs resolve them (GET /v1/models/. is read as the list) and the official clients refuse to send them, so the model could never be retrieved`
  }
  for (const char of name) {
    const special = URL_SPECIAL[char]
    if (special !== undefined) {
      return `expected no ${shownChar(char)} in a model name: in GET /v1/models/{name} it ${special}, so a URL written without escaping asks for another model`
    }
    const code = char.codePointAt(0) ?? 0
    if (code >= 0xd800 && code <= 0xdfff) {
      return `expected no unpaired surrogate in a model name (${shownChar(char)}): it has no UTF-8 form, so no URL can carry it`
    }
    if (INVISIBLE.test(char)) {
      return `expected no spaces, line breaks, control or invisible characters in a model name (${shownChar(char)}): clients do not send them, and the name without it is another model`
    }
  }
  return undefined
}

const URL_SPECIAL: Readonly<Record<string, string>> = {
  '?': 'starts the query',
  '#': 'starts the fragment (never sent)',
  '%': 'starts an escape (%41 is read as "A")',
  '\\': 'is read as "/" by URL parsers (fetch, browsers: /v1/models/a\\b asks for /v1/models/a/b)',
}

/** White space (U+0020, U+00A0, U+2028…), controls (C0, DEL, C1) and formatting characters (U+200B, U+FEFF, bidi overrides). */
const INVISIBLE = /[\p{White_Space}\p{Cc}\p{Cf}]/u

/**
 * A character for a config message: quoted when it can be seen (`"?"`,
 * `"通"`), else by its code point (`U+000A`): a line break or a zero-width
 * space quoted would be invisible, or break the message's line.
 */
export function shownChar(char: string): string {
  const code = char.codePointAt(0) ?? 0
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`
  return INVISIBLE.test(char) || (code >= 0xd800 && code <= 0xdfff) ? hex : `"${char}"`
}
