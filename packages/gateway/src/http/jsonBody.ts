import { isUtf8 } from 'node:buffer'
import type { IncomingMessage } from 'node:http'
import { type Deadline, quoted } from '@hourglass/core'
import type { Request, RequestHandler, Response } from 'express'
import {
  INVALID_UTF8,
  INVALID_UTF16,
  JSON_TOO_MANY_KEYS,
  TRANSFER_CODING_UNSUPPORTED,
} from './bodyError.js'
import { closeAfterAnswer } from './closeAfterAnswer.js'
import { GatewayRequestError } from './GatewayRequestError.js'
import { MAX_JSON_DEPTH } from './jsonDepth.js'
import { MAX_BODY_DEPTH } from './jsonDepthLimit.js'
import { bodyShapeProblem } from './jsonKeyLimit.js'
import {
  type BodyError,
  bodyFailure,
  bodyStillOwed,
  codingOf,
  hasBody,
  readBody,
  tooLargeFailure,
} from './readBody.js'
import { unsupportedTransferCoding } from './transferCoding.js'

/**
 * The JSON body parser of `POST /v1/chat/completions`: bodies up to
 * `limitBytes` (larger: 413), gzip/deflate/br decoded (corrupt: 400), and
 * UTF-8 checked strictly — decoding would otherwise turn invalid bytes into
 * U+FFFD and send the provider text the client never wrote (400 instead).
 * What express.json does, with its error types (`bodyError` maps them),
 * except that a body past the limit is refused as soon as it is (see
 * `readBody`), and a connection whose upload was not read to its end (a
 * refusal, a body that is not JSON) is closed after the answer without
 * losing it (`closeAfterAnswer`), and an empty body is `EMPTY_BODY`, not `{}`.
 */
export function jsonBody(
  limitBytes: number,
  readDeadline?: (req: Request) => Deadline,
  releaseDeadline?: (req: Request) => void,
): RequestHandler {
  if (readDeadline === undefined) {
    return (req, res, next) => {
      parseJson(req, res, limitBytes, next)
    }
  }
  return (req, res, next) => {
    const deadline = readDeadline(req)
    let settled = false
    let off: (() => void) | undefined
    let stop: (() => void) | undefined
    const finish = (error?: unknown) => {
      if (settled) return
      settled = true
      off?.()
      // Read: the handler takes the deadline over. Failed: nothing will.
      if (error !== undefined) releaseDeadline?.(req)
      next(error)
    }
    // A body that stops arriving (a slow or stalled client) would otherwise
    // be waited on until the ingress middleware's own plain 504, with no log
    // line: the read ends with the request's deadline like the call would —
    // an OpenAI-shaped 504 (503 in a drain, 499 when the client left),
    // through the router's error handler. The socket still owes body bytes
    // nobody will read: close it after the answer.
    off = deadline.onDone((reason) => {
      stop?.()
      closeAfterAnswer(res)
      finish(reason)
    })
    if (!settled) stop = parseJson(req, res, limitBytes, finish)
  }
}

/**
 * `req.body` of a request that sent no body, or an empty one (`Content-Length:
 * 0`, or a BOM or compression of nothing). body-parser reads it as `{}`, which
 * the handler then refused as `model: expected a string`: a missing field of
 * a body the client never sent. `parseChatRequest` says it is empty instead.
 */
export const EMPTY_BODY: unique symbol = Symbol('hourglass.gateway.emptyBody')

const utf8 = new TextDecoder('utf-8')
// Fatal, as UTF-8 is checked: a lone surrogate or an odd byte would
// otherwise be decoded to U+FFFD and sent as text the client never wrote.
const utf16le = new TextDecoder('utf-16le', { fatal: true })
const utf16be = new TextDecoder('utf-16be', { fatal: true })
/** `utf-16`: the byte order its BOM says; without one, little-endian (what Windows and .NET send). */
const utf16 = {
  decode: (bytes: Uint8Array) =>
    (bytes[0] === 0xfe && bytes[1] === 0xff ? utf16be : utf16le).decode(bytes),
}

/**
 * Reads and parses the body into `req.body`, then `next()`; `next(error)`
 * with body-parser's error types. Returns a stop function (nothing more is
 * read, `next` is not called).
 */
function parseJson(
  req: Request,
  res: Response,
  limitBytes: number,
  next: (error?: unknown) => void,
): (() => void) | undefined {
  // Read already (an app's own body parser before the gateway): parsed JSON
  // as it left it; a JSON body it kept as bytes or text is parsed here.
  if (req.readableEnded || (req as { _body?: unknown })._body === true) {
    next(parseAppBody(req, limitBytes))
    return undefined
  }
  // No body at all (no Content-Length or Transfer-Encoding: `curl -X POST`): empty, as below.
  if (!hasBody(req)) {
    req.body = EMPTY_BODY
    next()
    return undefined
  }
  // Not JSON: `req.body` stays unset and the handler says what is expected.
  if (!isJson(req.headers['content-type'])) {
    // Its 400 comes before the body's end, which nobody will read: the
    // connection closes after it rather than reading on whatever still comes.
    if (bodyStillOwed(req)) closeAfterAnswer(res)
    next()
    return undefined
  }
  // A transfer coding Node leaves in place (`gzip, chunked`): its bytes
  // are not the body the client meant, whatever they are read as.
  const transferCoding = unsupportedTransferCoding(req.headers['transfer-encoding'])
  if (transferCoding !== undefined) {
    refuse(
      req,
      res,
      next,
      bodyFailure(
        501,
        TRANSFER_CODING_UNSUPPORTED,
        `unsupported Transfer-Encoding ${quoted(transferCoding, 40)}: send the body chunked or with a Content-Length (compressed: name gzip, deflate or br in Content-Encoding)`,
      ),
    )
    return undefined
  }
  const charset = charsetOf(req.headers['content-type']) ?? 'utf-8'
  const decoder = decoderFor(charset)
  if (decoder === undefined) {
    refuse(req, res, next, unsupportedCharset(charset))
    return undefined
  }
  // A body declared too large is refused before a byte of it is read. (A
  // compressed one's limit applies to what it inflates to, which its
  // length does not tell: `readBody` counts it.)
  if (declaredTooLarge(req, limitBytes)) {
    refuse(req, res, next, tooLargeFailure(limitBytes))
    return undefined
  }
  return readBody(req, limitBytes, (error, body) => {
    if (error !== undefined) return refuse(req, res, next, error)
    const text = decodeBody(body as Buffer, charset, decoder)
    next(typeof text === 'string' ? parseText(req, text) : text)
  })
}

/**
 * Objects an app's own parser left for a body that was not `application/json`
 * (`express.urlencoded()`'s form fields: `curl -d` without `-H 'content-type:
 * application/json'` sends JSON as a form, read as one field named by the
 * whole JSON text). Taken as the body when they are a valid request (an
 * app's `express.json({ type: '*\/*' })` read JSON whatever its type);
 * refused otherwise for their Content-Type, as the gateway's own reader
 * refuses it, not as a body whose `model` is missing.
 */
export const NOT_JSON_TYPED = new WeakSet<object>()

/**
 * The body an app's own parser read ahead of the gateway. An object
 * (`express.json()`) is taken as it left it. A JSON body it kept as bytes
 * (`express.raw({ type: 'application/json' })`, as apps verifying webhook
 * signatures mount it) or text (`express.text(…)`) is what the client sent:
 * decoded and parsed here with the gateway's own checks, its size limit
 * too. Left as it was, a well-formed request was refused as the client's
 * fault: a Buffer read as a body whose `model` is missing, a string as a
 * body that is no JSON object. Returns the error the body earns, if any.
 */
function parseAppBody(
  req: Request,
  limitBytes: number,
): BodyError | GatewayRequestError | undefined {
  const body: unknown = req.body
  const bytes = Buffer.isBuffer(body)
  if (!bytes && typeof body === 'object' && body !== null) {
    // body-parser reads an empty body (`Content-Length: 0`) as `{}`: empty,
    // as the gateway's own reader says (EMPTY_BODY), not a missing `model`.
    if (
      req.headers['content-length'] === '0' &&
      req.headers['transfer-encoding'] === undefined &&
      Object.keys(body).length === 0
    ) {
      req.body = EMPTY_BODY
      return undefined
    }
    if (!isJson(req.headers['content-type'])) NOT_JSON_TYPED.add(body)
  }
  if ((!bytes && typeof body !== 'string') || !isJson(req.headers['content-type'])) return undefined
  // A charset the gateway refuses is refused whichever parser decoded it
  // (body-parser's text parser decodes any that iconv-lite knows).
  const charset = charsetOf(req.headers['content-type']) ?? 'utf-8'
  const decoder = decoderFor(charset)
  if (decoder === undefined) return unsupportedCharset(charset)
  // The gateway's own limit, as for a body it reads (the app's parser may allow more).
  if (appBodySize(req, body as Buffer | string, charset) > limitBytes) {
    return tooLargeFailure(limitBytes)
  }
  if (!bytes) return parseText(req, body as string)
  const text = decodeBody(body as Buffer, charset, decoder)
  return typeof text === 'string' ? parseText(req, text) : text
}

/**
 * The size of a body an app's parser read: its bytes; for text, its length
 * in the charset it came in (two bytes a UTF-16 code unit), as the
 * gateway's own reader counts the body it decodes, whether it came with a
 * Content-Length, chunked or compressed — measured as UTF-8, a UTF-16 body
 * passed a limit at half its size. At least an uncompressed body's
 * Content-Length (a byte order mark the decoder took off).
 */
function appBodySize(req: IncomingMessage, body: Buffer | string, charset: string): number {
  if (typeof body !== 'string') return body.length
  const size = charset.startsWith('utf-16') ? body.length * 2 : Buffer.byteLength(body)
  const declared = codingOf(req) === 'identity' ? Number(req.headers['content-length']) : 0
  return Math.max(size, Number.isFinite(declared) ? declared : 0)
}

/**
 * The charsets a body may be sent in. `utf8` too: the WHATWG Encoding label
 * that curl users and many clients write for UTF-8 (a 415 for it sent users
 * looking for another charset).
 */
function decoderFor(charset: string): Decoder | undefined {
  if (charset === 'utf-8' || charset === 'utf8') return utf8
  if (charset === 'utf-16') return utf16
  if (charset === 'utf-16le') return utf16le
  if (charset === 'utf-16be') return utf16be
  return undefined
}

interface Decoder {
  decode(bytes: Uint8Array): string
}

function unsupportedCharset(charset: string): BodyError {
  return bodyFailure(
    415,
    'charset.unsupported',
    `unsupported charset ${quoted(charset, 40)}: send UTF-8 (or UTF-16, named utf-16, utf-16le or utf-16be)`,
  )
}

/** The body's text, or the error its bytes earn (not valid in their charset). */
function decodeBody(bytes: Buffer, charset: string, decoder: Decoder): string | BodyError {
  if (decoder === utf8 && !isUtf8(bytes)) {
    return bodyFailure(400, INVALID_UTF8, 'the body is not valid UTF-8')
  }
  try {
    return decoder.decode(bytes)
  } catch {
    // Only UTF-16's decoders are fatal (UTF-8 was checked above).
    return bodyFailure(400, INVALID_UTF16, `the body is not valid ${charset.toUpperCase()}`)
  }
}

/** Parses the body's text into `req.body`; returns the error it earns, if any. */
function parseText(req: Request, text: string): BodyError | GatewayRequestError | undefined {
  // Before the parse, in one pass: what makes a body costly to parse is
  // its keys (jsonKeyLimit.ts) and its depth, as `JSON.parse` builds every
  // level before the schema can refuse one (jsonDepthLimit.ts).
  const shape = bodyShapeProblem(text)
  if (shape !== undefined) {
    if (shape.kind === 'keys') return bodyFailure(413, JSON_TOO_MANY_KEYS, shape.message)
    return new GatewayRequestError({
      status: 400,
      errorCode: 'invalid_request',
      param: shape.field,
      message: `${shape.field}: nested deeper than ${MAX_BODY_DEPTH} levels (free-form JSON may nest ${MAX_JSON_DEPTH})`,
    })
  }
  if (text.length === 0) {
    req.body = EMPTY_BODY
    return undefined
  }
  try {
    req.body = parseStrict(text)
  } catch (cause) {
    return Object.assign(bodyFailure(400, 'entity.parse.failed', 'the body is not valid JSON'), {
      cause,
    })
  }
  return undefined
}

/** Refused before the body was read to its end: the connection closes after the answer. */
function refuse(
  req: IncomingMessage,
  res: Response,
  next: (error?: unknown) => void,
  error: BodyError,
): void {
  if (bodyStillOwed(req)) closeAfterAnswer(res)
  next(error)
}

/** As body-parser's strict mode: an object or an array. (An empty body is `EMPTY_BODY` before it.) */
function parseStrict(text: string): unknown {
  // Indexes, not a regular expression: no match array per request.
  let i = 0
  while (i < text.length && isJsonSpace(text.charCodeAt(i))) i++
  const code = text.charCodeAt(i)
  if (code !== 0x7b && code !== 0x5b) {
    // Named as the pattern `^[ \t\n\r]*(.)` did: nothing for an end of
    // text or a line terminator, which `.` does not match.
    const first = i === text.length || isLineTerminator(code) ? undefined : text.charAt(i)
    throw new SyntaxError(`unexpected ${JSON.stringify(first)}`)
  }
  return JSON.parse(text)
}

function isJsonSpace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d
}

function isLineTerminator(code: number): boolean {
  return code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029
}

function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  const semi = contentType.indexOf(';')
  return (
    (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() ===
    'application/json'
  )
}

/** The charset parameter, lower-cased (quotes removed); undefined when none is given. */
function charsetOf(contentType: string | undefined): string | undefined {
  if (contentType === undefined || !contentType.includes(';')) return undefined
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType)
  if (match === null) return undefined
  return (match[1] ?? match[2] ?? '').toLowerCase()
}

/**
 * A Content-Length over the limit on an uncompressed body (a compressed one's
 * limit applies to what it inflates to, which its length does not tell).
 */
function declaredTooLarge(req: IncomingMessage, limitBytes: number): boolean {
  const declared = req.headers['content-length']
  if (declared === undefined) return false
  if (codingOf(req) !== 'identity') return false
  return Number(declared) > limitBytes
}
