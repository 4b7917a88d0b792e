/*
 * A provider can echo a key in what it answers — "Incorrect API key
 * provided: …" — in any shape: `classifyError`'s patterns know OpenAI's
 * `sk-…`, Google's `AIza…`, `Bearer …` and `key=…`, but not Ark's UUID keys
 * or a gateway's own tokens. The adapter knows the exact values it sends, so
 * it takes them out of everything it builds from a provider's body or
 * headers: the normalised errors (message and provider code), the errors a
 * dialect's parsers throw, and the messages of transport failures. All of
 * its keys, not only the one a request used: a provider's message may name
 * another (a project's key list, a key that was rotated out).
 */

import { schemeCredential } from '@hourglass/core'
import {
  cutRedacted,
  redactableKeys,
  redactKeys,
  withKeysRedacted,
} from '../dialects/classifyError.js'
import type { Dialect, ResponseMeta, StreamParser } from '../dialects/Dialect.js'
import type { ErrorInput } from '../dialects/ErrorInput.js'
import { isProviderReplyError, ProviderReplyError } from '../errors/ProviderReplyError.js'
import type { ChatResponse, NormalizedError } from '../types.js'

/**
 * Extra headers whose value is a credential too (`headers: { 'api-key': … }`
 * for Azure, a gateway's token): by name, as their values are not shaped.
 * By the words of the name, not its letters: Portkey's `x-portkey-provider`
 * carries a provider's name (`anthropic`), and "key" matched inside
 * "portkey" took that word out of every error message. Still, any word
 * ending in "key" (`x-appkey`, `privatekey`, `XAPIKey`) but "portkey", any
 * with "auth" in it (`OAuth`, `x-xauth`), and each credential word with a
 * number after it (`api-key2`, `x-token2`, `Cookie2`): a list of known
 * prefixes let those values into messages, as the letters had not.
 */
const SECRET_WORD =
  /^(?!portkeys?\d*$)(?:\w*auth\w*|\w*(?:key|token|secret|cookie|credential|signature|password)s?\d*|passwd\d*)$/i

/** Whether a header's name says its value is a credential (see SECRET_WORD). */
function isSecretHeaderName(name: string): boolean {
  return name.split(/[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])/).some((word) => SECRET_WORD.test(word))
}

/** The exact values to redact: the keys, and credential headers' values (with and without their scheme). */
export function secretValues(
  keys: readonly string[],
  headers: Readonly<Record<string, string>> | undefined,
): readonly string[] {
  const values = [...keys]
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!isSecretHeaderName(name)) continue
    values.push(value)
    // `Bearer <token>`: the token alone is what a provider would echo.
    const credential = schemeCredential(value)
    if (credential !== undefined) values.push(credential)
  }
  return redactableKeys(values)
}

/** What the adapter asks of its dialect, with `keys` redacted from whatever comes back from it. */
export interface RedactingDialect {
  normalizeError(input: ErrorInput): NormalizedError | undefined
  parseResponse(body: unknown, meta: ResponseMeta): ChatResponse
  createStreamParser(): StreamParser
}

export function redactingDialect(dialect: Dialect, keys: readonly string[]): RedactingDialect {
  if (keys.length === 0) {
    return {
      normalizeError: (input) => dialect.normalizeError(input),
      parseResponse: (body, meta) => dialect.parseResponse(body, meta),
      createStreamParser: () => dialect.createStreamParser(),
    }
  }
  // Dialect code is synchronous: the keys are in force exactly while it runs.
  const scoped = <T>(fn: () => T): T => {
    try {
      return withKeysRedacted(keys, fn)
    } catch (thrown) {
      throw redactThrown(thrown, keys)
    }
  }
  return {
    normalizeError: (input) => {
      const error = scoped(() => dialect.normalizeError(input))
      return error === undefined ? undefined : redactError(error, keys)
    },
    parseResponse: (body, meta) => scoped(() => dialect.parseResponse(body, meta)),
    createStreamParser: () => {
      const parser = dialect.createStreamParser()
      return {
        get done() {
          return parser.done
        },
        // Passed on, or the after-finish grace (readEvents) never ran for an adapter with a key.
        get finishing() {
          return parser.finishing === true
        },
        // Passed on, or a cut stream of an adapter with a key was charged by the estimate.
        get usageSoFar() {
          return parser.usageSoFar
        },
        // Passed on, or a cut stream of an adapter with a key named no response id.
        get responseId() {
          return parser.responseId
        },
        // Passed on, or a cut stream of an adapter with a key was charged at the dearest tier.
        get serviceTier() {
          return parser.serviceTier
        },
        // Passed on, or a filtered stream of an adapter with a key lost its log probabilities.
        get logprobsSoFar() {
          return parser.logprobsSoFar
        },
        parseStreamEvent: (message) => scoped(() => parser.parseStreamEvent(message)),
        end: () => scoped(() => parser.end()),
      }
    },
  }
}

/**
 * `error` without `keys` in its message or provider code. The dialects'
 * own normalisers already redacted them (inside `withKeysRedacted`); this
 * catches what any other code built — a custom dialect's normaliser, a
 * parser's own message.
 */
export function redactError(error: NormalizedError, keys: readonly string[]): NormalizedError {
  if (keys.length === 0) return error
  const message = redactKeys(error.message, keys)
  const code =
    error.providerCode === undefined ? undefined : cutRedacted(error.providerCode, 200, keys)
  if (message === error.message && code === error.providerCode) return error
  return Object.assign({}, error, { message }, code === undefined ? {} : { providerCode: code })
}

/** A dialect parser's `ProviderReplyError` rebuilt without the keys; anything else as it is. */
function redactThrown(thrown: unknown, keys: readonly string[]): unknown {
  if (!isProviderReplyError(thrown)) return thrown
  const error = redactError(thrown.error, keys)
  if (error === thrown.error && redactKeys(thrown.message, keys) === thrown.message) return thrown
  return new ProviderReplyError(
    error,
    thrown.cause === undefined ? undefined : { cause: thrown.cause },
  )
}
