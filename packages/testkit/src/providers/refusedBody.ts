import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

/**
 * The 400 a real API answers a body that is not JSON at all, in its own
 * shape; undefined when the body is JSON (or empty). The fake read such a
 * body as no body and generated its scripted answer — a 200 — so a client
 * that sent broken JSON (a body cut short, two bodies run together) passed
 * against the fake and failed against every provider:
 * - OpenAI-compatible chat: OpenAI's `invalid_request_error` "We could not
 *   parse the JSON body of your request. …", `param` and `code` null (the
 *   compatible providers' own words differ; the status does not);
 * - Anthropic: `invalid_request_error` "The request body is not valid JSON:
 *   …", no `details` — refused before the body is read, as a body over the
 *   byte limit is (live 400s quoted in anthropics/claude-code#6464, #77525,
 *   with a `request_id`). Its parser also refuses a JSON escape of a lone
 *   high surrogate (`"\ud83d"`, a string cut inside an emoji): "no low
 *   surrogate in string" (anthropics/claude-code#46717, #8165), which
 *   `JSON.parse` — and so the fake — took;
 * - Gemini: `INVALID_ARGUMENT` "Invalid JSON payload received. Unexpected
 *   token." with a `google.rpc.BadRequest` field violation saying the same,
 *   as Google's JSON front end answers it.
 * ERNIE's legacy route answers errors in 200 bodies; it is left as it was.
 */
export function unreadableBody(
  dialect: ProviderDialect,
  route: ProviderRoute,
  rawBody: string,
): ErrorReply | undefined {
  if (rawBody === '') return undefined
  let reason: string | undefined
  try {
    JSON.parse(rawBody)
  } catch (error) {
    reason = error instanceof Error ? error.message : String(error)
  }
  switch (route) {
    case 'openai-chat':
      if (reason === undefined) {
        return dialect === 'deepseek' ? deepseekLoneSurrogate(rawBody) : undefined
      }
      return {
        kind: 'error',
        status: 400,
        body: {
          error: {
            message:
              "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
            type: 'invalid_request_error',
            param: null,
            code: null,
          },
        },
      }
    case 'anthropic-messages': {
      // The lone surrogate is Anthropic's parser's own refusal: the fake of
      // another dialect answering Anthropic's format (DeepSeek's Anthropic
      // API) is not held to it.
      const why = reason ?? (dialect === 'anthropic' ? loneHighSurrogate(rawBody) : undefined)
      return why === undefined
        ? undefined
        : anthropicRefusal(`The request body is not valid JSON: ${why.slice(0, 200)}`)
    }
    case 'gemini': {
      if (reason === undefined) return undefined
      const message = 'Invalid JSON payload received. Unexpected token.'
      return {
        kind: 'error',
        status: 400,
        body: {
          error: {
            code: 400,
            message,
            status: 'INVALID_ARGUMENT',
            details: [
              {
                '@type': 'type.googleapis.com/google.rpc.BadRequest',
                fieldViolations: [{ description: message }],
              },
            ],
          },
        },
      }
    }
    default:
      return undefined
  }
}

/**
 * DeepSeek's 400 for a lone surrogate escape, in the words of its parser
 * (serde_json, the path prefixed): "Failed to parse the request body as
 * JSON: messages[3].content: lone leading surrogate in hex escape at line 1
 * column C" (JohnnyZ93/oai-compatible-copilot#206), or "unexpected end of
 * hex escape" when a high half is followed by no escape at all
 * (esengine/DeepSeek-Reasonix#1906), under DeepSeek's generic
 * `invalid_request_error` code. `JSON.parse` — and so the fake — took it.
 * The path is the first string (in document order) holding a lone half.
 */
function deepseekLoneSurrogate(rawBody: string): ErrorReply | undefined {
  const found = firstLoneSurrogate(rawBody)
  if (found === undefined) return undefined
  const before = Buffer.from(rawBody.slice(0, found.stop))
  const lineStart = before.lastIndexOf(0x0a) + 1
  const line = before.subarray(0, lineStart).filter((b) => b === 0x0a).length + 1
  // A half in a key alone has no path to name.
  const at = found.path ? `${found.path}: ` : ''
  return {
    kind: 'error',
    status: 400,
    body: {
      error: {
        message: `Failed to parse the request body as JSON: ${at}${found.why} at line ${line} column ${before.length - lineStart}`,
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_request_error',
      },
    },
    headers: {},
  }
}

/** Where a JSON text scan is: in an object (at `key`, or reading a key) or an array (at `index`). */
type Frame = { object: true; key: string; readingKey: boolean } | { object: false; index: number }

/**
 * The first lone surrogate escape in a JSON text, read as serde_json reads
 * it: a low half alone, or a high half followed by an escape that is no low
 * half, is a "lone leading surrogate"; a high half followed by no escape,
 * the "unexpected end of hex escape". `stop`: where the parser stopped (it
 * read the next escape, or the one character after the high half). `path`:
 * the string's (`messages[3].content`), `''` in a key; kept while the
 * text is scanned, in one flat loop — read from the parsed value, a body
 * nested 5,000 deep overflowed the stack (a 500 from the fake), and
 * integer-like or repeated keys named another string than the one found.
 */
function firstLoneSurrogate(text: string): { why: string; stop: number; path: string } | undefined {
  const half = (at: number): 'high' | 'low' | undefined => {
    if (text[at] !== '\\' || text[at + 1] !== 'u') return undefined
    const n = Number.parseInt(text.slice(at + 2, at + 6), 16)
    if (n >= 0xd800 && n <= 0xdbff) return 'high'
    return n >= 0xdc00 && n <= 0xdfff ? 'low' : undefined
  }
  const frames: Frame[] = []
  const top = (): Frame | undefined => frames[frames.length - 1]
  const pathHere = (): string => {
    const last = top()
    if (last?.object === true && last.readingKey) return ''
    let path = ''
    for (const frame of frames) {
      if (!frame.object) path += `[${frame.index}]`
      else path += path === '' ? frame.key : `.${frame.key}`
    }
    return path
  }
  let stringStart = -1
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (stringStart < 0) {
      const frame = top()
      if (c === '"') stringStart = i
      else if (c === '{') frames.push({ object: true, key: '', readingKey: true })
      else if (c === '[') frames.push({ object: false, index: 0 })
      else if (c === '}' || c === ']') frames.pop()
      else if (c === ':' && frame?.object === true) frame.readingKey = false
      else if (c === ',' && frame !== undefined) {
        if (frame.object) frame.readingKey = true
        else frame.index++
      }
      continue
    }
    if (c === '"') {
      const frame = top()
      if (frame?.object === true && frame.readingKey) {
        frame.key = JSON.parse(text.slice(stringStart, i + 1)) as string
      }
      stringStart = -1
      continue
    }
    if (c !== '\\') continue
    const kind = half(i)
    if (kind === 'low') {
      return { why: 'lone leading surrogate in hex escape', stop: i + 6, path: pathHere() }
    }
    if (kind === 'high') {
      if (half(i + 6) === 'low') {
        i += 11
        continue
      }
      if (text[i + 6] === '\\' && text[i + 7] === 'u') {
        return { why: 'lone leading surrogate in hex escape', stop: i + 12, path: pathHere() }
      }
      return { why: 'unexpected end of hex escape', stop: i + 7, path: pathHere() }
    }
    i++ // the escaped character: `\"` does not end the string
  }
  return undefined
}

/**
 * `\uD800`–`\uDBFF` escaped in a string with no `\uDC00`–`\uDFFF` escape
 * right after it, in the words of Anthropic's parser: "no low surrogate in
 * string: line 1 column C (char P)". An escaped backslash before the `u`
 * (`\\ud83d`) is text, not an escape.
 */
function loneHighSurrogate(rawBody: string): string | undefined {
  const lone = /(?<!\\)((?:\\\\)*)\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})/
  const match = lone.exec(rawBody)
  if (match === null) return undefined
  const at = match.index + (match[1] as string).length
  const before = rawBody.slice(0, at)
  const line = before.split('\n').length
  const column = at - before.lastIndexOf('\n')
  return `no low surrogate in string: line ${line} column ${column} (char ${at})`
}

/**
 * OpenAI's 400 for `stream_options` on a request that does not stream:
 * `{"error":{"message":"The 'stream_options' parameter is only allowed when
 * 'stream' is enabled.","type":"invalid_request_error","param":
 * "stream_options","code":null}}` (quoted from the API in BerriAI/litellm#5803
 * and lobehub/lobehub#6735). The `openai` dialect only: what the compatible
 * providers answer is not documented. `null` reads as left out.
 */
export function streamOptionsWithoutStream(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
): ErrorReply | undefined {
  if (dialect !== 'openai' || route !== 'openai-chat') return undefined
  if (typeof body !== 'object' || body === null) return undefined
  const json = body as Record<string, unknown>
  if (json['stream'] === true) return undefined
  if (json['stream_options'] === undefined || json['stream_options'] === null) return undefined
  return {
    kind: 'error',
    status: 400,
    body: {
      error: {
        message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        type: 'invalid_request_error',
        param: 'stream_options',
        code: null,
      },
    },
  }
}

/**
 * The versions Anthropic takes (platform.claude.com/docs/en/api/versioning):
 * `2026-10-21` is the one the official SDKs send from the major version
 * that adopted it — TypeScript (@anthropic-ai/sdk) and PHP 1.0.0, Python,
 * Go and Ruby 2.0.0, Java 3.0.0, C# 13.0.0 (platform.claude.com,
 * "Migrating to API version 2026-10-21"). Left out, the fake refused every
 * request of a client on a current SDK.
 */
const ANTHROPIC_VERSIONS: ReadonlySet<string> = new Set(['2026-10-21', '2023-06-01', '2023-01-01'])

/**
 * Anthropic's 400 for a Messages request without a valid `anthropic-version`
 * header: `{"type":"error","error":{"type":"invalid_request_error","message":
 * "anthropic-version: header is required"},"request_id":…}` when it is
 * missing (envoyproxy/ai-gateway#1909, PipedreamHQ/pipedream#9697), and
 * `anthropic-version: "2023-06-01, 2023-06-01" is not a valid version` for
 * any other value — a proxy that adds its own header beside the client's
 * sends both, joined (decolua/9router#2357). The fake answered either 200,
 * so a client or proxy that forgot (or doubled) the header passed against it.
 */
export function anthropicVersionProblem(
  dialect: ProviderDialect,
  route: ProviderRoute,
  headers: Record<string, string>,
): ErrorReply | undefined {
  // Anthropic's own API only: every fake answers every format, and
  // DeepSeek's Anthropic API documents the header as ignored.
  if (dialect !== 'anthropic' || route !== 'anthropic-messages') return undefined
  const version = headers['anthropic-version']
  if (version !== undefined && ANTHROPIC_VERSIONS.has(version)) return undefined
  const message =
    version === undefined
      ? 'anthropic-version: header is required'
      : `anthropic-version: ${JSON.stringify(version.slice(0, 100))} is not a valid version`
  return anthropicRefusal(message)
}

/**
 * Anthropic's 400 for a Messages request without `max_tokens`, which the API
 * requires (OpenAI and Gemini default it): `{"type":"error","error":{"type":
 * "invalid_request_error","message":"max_tokens: Field required"},
 * "request_id":…}` (a live answer quoted in tickernelz/opencode-mem#50). A
 * client or gateway that passes an OpenAI request on without one passed
 * against the fake. `null` is not a number either ("max_tokens: Input should
 * be a valid integer"), and is left to the API's other checks.
 */
export function anthropicMaxTokensMissing(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
): ErrorReply | undefined {
  // Anthropic's own API only, as `anthropicVersionProblem`.
  if (dialect !== 'anthropic' || route !== 'anthropic-messages') return undefined
  if (typeof body !== 'object' || body === null) return undefined
  if ((body as Record<string, unknown>)['max_tokens'] !== undefined) return undefined
  return anthropicRefusal('max_tokens: Field required')
}

/**
 * OpenAI's reasoning models — the o-series and the gpt-5 family, the chat
 * snapshots (`gpt-5-chat-latest`) aside — refuse the old `max_tokens`:
 * `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported
 * with this model. Use 'max_completion_tokens' instead.","type":
 * "invalid_request_error","param":"max_tokens","code":
 * "unsupported_parameter"}}` (quoted from the API for gpt-5 in
 * griptape-ai/ComfyUI-Griptape#312 and fish2018/YPrompt#26, for o1 and
 * o3-mini in teilomillet/gollm#33). The `openai` dialect only, by the model
 * the request names; `null` reads as left out.
 */
export function maxTokensUnsupported(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
): ErrorReply | undefined {
  if (dialect !== 'openai' || route !== 'openai-chat') return undefined
  if (typeof body !== 'object' || body === null) return undefined
  const json = body as Record<string, unknown>
  const model = json['model']
  if (typeof model !== 'string' || !REASONING_MODEL.test(model) || model.includes('-chat')) {
    return undefined
  }
  if (json['max_tokens'] === undefined || json['max_tokens'] === null) return undefined
  return {
    kind: 'error',
    status: 400,
    body: {
      error: {
        message:
          "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        type: 'invalid_request_error',
        param: 'max_tokens',
        code: 'unsupported_parameter',
      },
    },
  }
}

/** `o1`, `o1-mini`, `o3-2025-04-16`, `o4-mini`, `gpt-5`, `gpt-5.1`, `gpt-5-mini`, … */
const REASONING_MODEL = /^(?:o[134](?:-|$)|gpt-5(?:[.-]|$))/

/**
 * Anthropic's 400 `invalid_request_error` for a request refused before it is
 * read, as the live answers quoted above are: no `details` (the error
 * builders' errors carry `details: null`), a `request_id` in the body and
 * its `request-id` header.
 */
function anthropicRefusal(message: string): ErrorReply {
  return {
    kind: 'error',
    status: 400,
    body: {
      type: 'error',
      error: { type: 'invalid_request_error', message },
      request_id: 'req_011CFakeHourglass',
    },
    headers: { 'request-id': 'req_011CFakeHourglass' },
  }
}
