/*
 * An adapter's `baseURL` and `model` go into every request: one that is no
 * http(s) URL or no model id is refused when the adapter is made, not by
 * each attempt. The keys and headers an adapter is given go into every request's HTTP
 * header lines. What undici refuses there (a line break, a control
 * character, a header name that is no HTTP token) would make every request
 * fail inside undici with an `InvalidArgumentError` — before anything is
 * sent, and the same way every time — so it is refused when the adapter is
 * made, naming the option. The rules are core's (`isHeaderName`,
 * `isHeaderValue`, `isVisibleAscii`), which the gateway's config schema
 * uses too, so a config the gateway accepts always makes adapters. A key or
 * a header value is never quoted: either may be a secret.
 */
import {
  describeValue,
  isHeaderName,
  isHeaderValue,
  isVisibleAscii,
  optionError,
  quoted,
  refuseUnknownOptions,
} from '@hourglass/core'
import type { AdapterOptions } from './ModelAdapter.js'

/** Every option an adapter reads (the type checker keeps the list whole). */
export const ADAPTER_OPTION_NAMES: readonly string[] = Object.keys({
  baseURL: true,
  apiKey: true,
  apiKeys: true,
  model: true,
  name: true,
  headers: true,
  fetch: true,
  maxResponseBytes: true,
  maxStreamBytes: true,
} satisfies Record<keyof AdapterOptions, true>)

/**
 * Headers an adapter cannot send: undici refuses the first four on every
 * request, and the body's length is the adapter's to state.
 */
const REFUSED_HEADERS: Readonly<Record<string, string>> = {
  'transfer-encoding': 'undici refuses it (the body is sent with its length)',
  'keep-alive': 'undici refuses it (connections are the dispatcher’s)',
  upgrade: 'undici refuses it on a request',
  expect: 'undici does not support it',
  'content-length': 'the adapter sends the length of each body it builds',
}

interface CheckedOptions {
  baseURL?: unknown
  model?: unknown
  apiKey?: unknown
  apiKeys?: unknown
  headers?: unknown
  maxResponseBytes?: unknown
  maxStreamBytes?: unknown
}

/**
 * Throws a `TypeError` naming the first option that no request could be
 * sent with: a `baseURL` that is no absolute http(s) URL (or whose path
 * ends in what the adapter of `wire` appends), a `model` that is
 * no name, both `apiKey` and `apiKeys`, a key or header undici would refuse
 * (or that HTTP would mangle); or a `maxResponseBytes` or `maxStreamBytes`
 * that is no byte count.
 */
export function checkAdapterOptions(
  name: string,
  options: CheckedOptions,
  wire: Wire = 'openai',
): void {
  const where = `${name} adapter`
  checkBaseURL(where, options.baseURL, BASES[wire] ?? BASES.openai)
  // Sent as it is in every body (or path: Gemini's `models/undefined`), and
  // priced by `CostBudget`: a missing one went out as no model at all.
  if (typeof options.model !== 'string' || options.model === '') {
    throw new TypeError(
      `${where}: model must be the model id, a non-empty string, got ${describeValue(options.model)}`,
    )
  }
  checkByteCount(where, 'maxResponseBytes', options.maxResponseBytes)
  checkByteCount(where, 'maxStreamBytes', options.maxStreamBytes)
  // One of the two: given both, `apiKey` was dropped without a word.
  if (options.apiKey !== undefined && options.apiKeys !== undefined) {
    throw new TypeError(
      `${where}: apiKey and apiKeys are both set; pick one (put every key in apiKeys to rotate them)`,
    )
  }
  if (options.apiKey !== undefined) checkKey(where, 'apiKey', options.apiKey)
  if (options.apiKeys !== undefined) {
    if (!Array.isArray(options.apiKeys)) {
      throw new TypeError(
        `${where}: apiKeys must be an array of keys, got ${kindOf(options.apiKeys)}`,
      )
    }
    for (const [i, key] of (options.apiKeys as unknown[]).entries()) {
      checkKey(where, `apiKeys[${i}]`, key)
    }
  }
  const headers = options.headers
  if (headers === undefined) return
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) {
    throw new TypeError(
      `${where}: headers must be an object of header names to values, got ${kindOf(headers)}`,
    )
  }
  // One header to HTTP in any letter case: `X-Org` beside `x-org` sent one
  // of the two values (the last), the other dropped without a word — as the
  // gateway's config refuses it.
  const seen = new Map<string, string>()
  for (const [key, value] of Object.entries(headers)) {
    const option = `headers[${quoted(key, 40)}]`
    if (!isHeaderName(key)) {
      throw new TypeError(
        `${where}: ${option} is not an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~ only: no spaces, colons or line breaks); undici would refuse every request`,
      )
    }
    const lower = key.toLowerCase()
    const first = seen.get(lower)
    if (first !== undefined) {
      throw new TypeError(
        `${where}: ${option} repeats headers[${quoted(first, 40)}]: header names are one in any letter case, and only one of the two values would be sent (keep one)`,
      )
    }
    seen.set(lower, key)
    const refused = Object.hasOwn(REFUSED_HEADERS, lower) ? REFUSED_HEADERS[lower] : undefined
    if (refused !== undefined) {
      throw new TypeError(`${where}: ${option} cannot be set: ${refused}`)
    }
    // undici skips an undefined value (a header left unset).
    if (value === undefined) continue
    if (typeof value !== 'string') {
      throw new TypeError(`${where}: ${option} must be a string, got ${kindOf(value)}`)
    }
    if (!isHeaderValue(value)) {
      throw new TypeError(
        `${where}: ${option} ${problemOf(value, true)}; a header value may hold visible ASCII characters, with spaces or tabs inside only — no line breaks or control characters (the value is not shown)`,
      )
    }
  }
}

function checkKey(where: string, option: string, key: unknown): void {
  if (typeof key !== 'string') {
    throw new TypeError(`${where}: ${option} must be a string, got ${kindOf(key)}`)
  }
  if (isVisibleAscii(key)) return
  throw new TypeError(
    `${where}: ${option} ${problemOf(key)}; a key may hold visible ASCII characters only, as it is sent in an HTTP header, where this fails every request (the key is not shown)`,
  )
}

/** What is wrong with a value, and where — never the value itself. */
function problemOf(value: string, spacesInside = false): string {
  if (value === '') return 'is empty'
  let i = value.search(spacesInside ? /[^\t\x20-\x7e]/ : /[^\x21-\x7e]/)
  // Only whitespace at an end is wrong in a value that may hold it inside.
  if (i < 0) i = /^[\t ]/.test(value) ? 0 : value.length - 1
  const c = value.charCodeAt(i)
  const what =
    c === 0x0a || c === 0x0d
      ? 'a line break'
      : c === 0x20
        ? 'a space'
        : c === 0x09
          ? 'a tab'
          : c < 0x20 || c === 0x7f
            ? 'a control character'
            : 'a non-ASCII character'
  const at =
    i === value.length - 1
      ? 'at its end'
      : i === 0
        ? 'at its start'
        : `at character ${i + 1} of ${value.length}`
  const hint =
    what === 'a line break' && i === value.length - 1 ? ' (a secret file’s trailing newline?)' : ''
  return `has ${what} ${at}${hint}`
}

function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value)
  if (Array.isArray(value)) return 'an array'
  // A URL object for `baseURL` read "a object".
  if (value instanceof URL) return 'a URL object (pass its href)'
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}

/**
 * Options that are no object (`gemini()`) failed reading their first field
 * ("Cannot read properties of undefined"). `where` names the factory or the adapter.
 */
export function checkOptionsObject(where: string, options: unknown): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(
      `${where}: options must be an object ({ baseURL, model, apiKey, … }), got ${kindOf(options)}`,
    )
  }
}

/**
 * Options an adapter factory does not read are refused (core's
 * `refuseUnknownOptions`, naming `taker`): ignored, `maxResponseByte` left
 * the 32 MiB default in force and `header` sent none of the headers. Options
 * that are no object are `checkOptionsObject`'s to refuse, as before.
 */
export function refuseUnknownAdapterOptions(
  taker: string,
  options: unknown,
  names: readonly string[] = ADAPTER_OPTION_NAMES,
): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return
  refuseUnknownOptions(options, names, taker)
}

/** The wire formats, whose paths differ in what the base URL holds. */
export type Wire = 'openai' | 'anthropic' | 'gemini'

/**
 * What a wire's `baseURL` holds, as its official SDK has it: the adapter
 * appends `path`. OpenAI's SDK and REST docs put the version in the base
 * (`https://api.openai.com/v1` + `/chat/completions`); Anthropic's SDK does
 * not (`https://api.anthropic.com` + `/v1/messages`); Gemini's REST base
 * holds it (`…googleapis.com/v1beta` + `/models/{model}:generateContent`).
 * `doubled` matches a base path that already ends in what is appended — the
 * full endpoint copied, or Anthropic's `/v1` after the OpenAI habit — which
 * would send every request to a path no provider serves (`/v1/v1/messages`,
 * a 404 on every call, each retried or handed to the next model), and
 * `fix` says what to drop. `bare` names an official host whose base must
 * hold a version, with what to add: `https://api.openai.com` alone asks
 * `/chat/completions`, a 404.
 */
interface Base {
  examples: string
  path: string
  doubled: RegExp
  fix: string
  bare?: { host: string; add: string }
  /**
   * A host that serves two APIs under one name, this wire's below paths
   * `path` matches (`wanted: true`) or the others (`wanted: false`): a base
   * on the other one asks a path it does not serve, a 404 on every call.
   */
  otherSurface?: { host: string; path: RegExp; wanted: boolean; why: string }
}

const BASES: Readonly<Record<Wire, Base>> = {
  openai: {
    examples: 'https://api.openai.com/v1, http://localhost:8080/v1',
    path: '/chat/completions',
    doubled: /\/chat\/completions$/i,
    fix: 'end it before /chat/completions (https://api.openai.com/v1)',
    bare: { host: 'api.openai.com', add: '/v1 (https://api.openai.com/v1)' },
    // Google's OpenAI-compatible API is under `/v1beta/openai`; its native
    // base (`/v1beta`) has no `/chat/completions`.
    otherSurface: {
      host: 'generativelanguage.googleapis.com',
      path: /\/openai$/i,
      wanted: true,
      why: 'generativelanguage.googleapis.com serves the OpenAI wire under /v1beta/openai only (https://generativelanguage.googleapis.com/v1beta/openai), and answers /chat/completions anywhere else 404 (for its own API use the Gemini adapter)',
    },
  },
  anthropic: {
    examples: 'https://api.anthropic.com, http://localhost:8080 — no /v1',
    path: '/v1/messages',
    doubled: /\/v1(\/messages)?$/i,
    fix: 'drop the trailing /v1 (https://api.anthropic.com, as Anthropic’s SDK takes it)',
  },
  gemini: {
    examples: 'https://generativelanguage.googleapis.com/v1beta, http://localhost:8080/v1beta',
    path: '/models/{model}:generateContent',
    doubled: /\/models(\/[^/]*)?$/i,
    fix: 'end it before /models (https://generativelanguage.googleapis.com/v1beta)',
    bare: {
      host: 'generativelanguage.googleapis.com',
      add: '/v1beta (https://generativelanguage.googleapis.com/v1beta)',
    },
    // `…/v1beta/openai`, what Google's OpenAI-compatibility guide gives as
    // the base: only OpenAI's paths are served below it, so the native
    // `models/{model}:generateContent` appended there is a 404 on every call.
    otherSurface: {
      host: 'generativelanguage.googleapis.com',
      path: /\/openai$/i,
      wanted: false,
      why: 'its path ends in /openai, Google’s OpenAI-compatible API, which does not serve the Gemini adapter’s /models/{model}:generateContent (a 404 on every call): end it before /openai (https://generativelanguage.googleapis.com/v1beta), or send to that address on the OpenAI wire (the value is not shown)',
    },
  },
}

/**
 * An absolute `http:` or `https:` URL, as undici sends to. One without its
 * scheme (`api.openai.com/v1`) does not parse, and every attempt failed as
 * a retryable network error (each retried, charging the retry budget);
 * `localhost:8080/v1` parses with `localhost:` as its scheme, which undici
 * refuses. Nor one with a user or password, a query or a fragment (below),
 * nor one whose path doubles what the adapter appends (`Base`). The value is not shown: a URL
 * may carry credentials.
 */
function checkBaseURL(where: string, baseURL: unknown, base: Base): void {
  const problem = problemOfBase(baseURL, base)
  if (problem !== undefined) throw new TypeError(`${where}: baseURL ${problem}`)
}

/**
 * Why no request of an adapter of `wire` could be sent to `baseURL` (what
 * the adapter refuses it with, after `baseURL `: `must be an absolute …`),
 * or undefined when none. Exported for a config that holds a `baseURL` to
 * refuse it where it reads it, with its other problems — the gateway's,
 * whose adapters are made only once the whole config has passed — by this
 * one rule, not a copy that drifts from it.
 */
export function baseURLProblem(baseURL: unknown, wire: Wire = 'openai'): string | undefined {
  return problemOfBase(baseURL, BASES[wire] ?? BASES.openai)
}

function problemOfBase(baseURL: unknown, base: Base): string | undefined {
  const rule = `an absolute http:// or https:// URL (${base.examples})`
  if (typeof baseURL !== 'string') return `must be ${rule}, got ${kindOf(baseURL)}`
  let url: URL
  try {
    url = new URL(baseURL)
  } catch {
    const hint = baseURL.includes('://') ? '' : ' (no http:// or https:// before the host?)'
    return `must be ${rule}; it does not parse as a URL${hint} (the value is not shown)`
  }
  const protocol = url.protocol
  if (protocol !== 'http:' && protocol !== 'https:') {
    const why = baseURL.slice(protocol.length).startsWith('//')
      ? 'its scheme is not http: or https:'
      : 'it has no http:// or https:// before the host (a host:port reads as a scheme)'
    return `must be ${rule}; ${why} (the value is not shown)`
  }
  // undici.request drops a URL's `user:password@` without a word: every
  // request went without it (a 401, read as a rejected key, and the keys
  // retired), and the password rode along in `adapter.baseURL`, which is
  // printed and named. As the gateway's config refuses it.
  if (url.username !== '' || url.password !== '') {
    return 'must have no user or password (user:password@host): they are not sent (the provider answers 401 and the keys are retired); put a credential in apiKey or headers (the value is not shown)'
  }
  // The path is appended as text: a `?` or `#` (the characters — a bare `?`
  // parses to no `search` and still swallows it) put it inside the query or
  // fragment, and every request asked the base path, a 404. As the
  // gateway's config refuses it. Not shown: a query may carry a signature.
  if (baseURL.includes('?') || baseURL.includes('#')) {
    return `must have no query string or fragment (?… or #…): the adapter appends its path (${base.path}), which would land inside them, every request asking the base path (the value is not shown)`
  }
  // Refused, not mended: the adapter's `baseURL` is what admission keys its
  // cooldowns by and what the attempt records report, and the same value
  // works in the provider's own SDK (which would double it too).
  const path = url.pathname.replace(/\/+$/, '')
  if (base.doubled.test(path)) {
    return `must be ${rule}; its path already ends in what the adapter appends (${base.path}), so every request would go to a doubled path the provider answers 404: ${base.fix} (the value is not shown)`
  }
  const host = url.hostname.toLowerCase()
  if (base.bare !== undefined && path === '' && host === base.bare.host) {
    return `must be ${rule}; ${base.bare.host} needs its API version in the path (the adapter appends ${base.path}, which it answers 404): add ${base.bare.add}`
  }
  const other = base.otherSurface
  if (other !== undefined && host === other.host && other.path.test(path) !== other.wanted) {
    return `must be ${rule}; ${other.why}`
  }
  return undefined
}

/** No "0 = unlimited": an unbounded read is what the byte limits exist to end. */
function checkByteCount(where: string, option: string, max: unknown): void {
  if (max !== undefined && !(typeof max === 'number' && Number.isSafeInteger(max) && max > 0)) {
    throw optionError(`${where}: ${option}`, 'a whole number of bytes above 0', max)
  }
}
