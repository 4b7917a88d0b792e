import { printableLine } from '../text/providerText.js'
import type { NormalizedError } from '../types.js'

/** All of a provider's code or `param` an error keeps. */
export const MAX_CODE_CHARS = 200

/**
 * `error` with its message, `param` and provider code on one printable
 * line (`printableLine`), as `classifyError` leaves a provider's error: for
 * what other code builds from a provider's words — a parser's error (Gemini's
 * block reason), a finish reason, a custom dialect's normaliser. `error`
 * itself when nothing changes (every error `classifyError` made). The
 * message is not cut again: llm's own words may wrap a provider's, cut
 * already.
 */
export function printableError<E extends NormalizedError>(error: E): E {
  const message = typeof error.message === 'string' ? printableLine(error.message) : error.message
  const providerCode = codeLine(error.providerCode)
  const param = codeLine(error.param)
  if (message === error.message && providerCode === error.providerCode && param === error.param) {
    return error
  }
  const { providerCode: _code, param: _param, ...rest } = error
  return {
    ...rest,
    message,
    ...(providerCode === undefined ? {} : { providerCode }),
    ...(param === undefined ? {} : { param }),
  } as unknown as E
}

/**
 * A provider's code or `param` at most `MAX_CODE_CHARS` long, on one
 * printable line (a lone half of a surrogate pair the cut left last is
 * hidden with the rest); undefined when nothing printable is left: a code
 * of control characters names nothing.
 */
export function codeLine(code: string | undefined): string | undefined {
  if (typeof code !== 'string') return code
  const line = printableLine(code.length > MAX_CODE_CHARS ? code.slice(0, MAX_CODE_CHARS) : code)
  return line === '' ? undefined : line
}
