import { isUtf8 } from 'node:buffer'
import type { IncomingMessage } from 'node:http'
import type { Deadline } from '@hourglass/core'
import express, { type Request, type RequestHandler } from 'express'
import { INVALID_UTF8 } from './bodyError.js'

/**
 * The JSON body parser of `POST /v1/chat/completions`: bodies up to
 * `limitBytes` (larger: 413), gzip/deflate/br decoded (corrupt: 400), and
 * UTF-8 checked strictly — decoding would otherwise turn invalid bytes into
 * U+FFFD and send the provider text the client never wrote (400 instead).
 */
export function jsonBody(
  limitBytes: number,
  readDeadline?: (req: Request) => Deadline,
  releaseDeadline?: (req: Request) => void,
): RequestHandler {
  const json = express.json({ limit: limitBytes, verify: verifyUtf8 })
  // A body declared too large is refused before a byte of it is read.
  // body-parser refuses it at once too, but then reads the whole upload to
  // its end before answering: a 1 GB upload was taken in (or waited on until
  // the deadline) for a 413. The connection closes after the answer (the
  // client still owes the body, which nobody will read), as nginx does.
  const parse: RequestHandler = (req, res, next) => {
    if (declaredTooLarge(req, limitBytes)) {
      res.setHeader('connection', 'close')
      next(Object.assign(new Error('request entity too large'), { type: 'entity.too.large' }))
      return
    }
    json(req, res, next)
  }
  if (readDeadline === undefined) return parse
  return (req, res, next) => {
    const deadline = readDeadline(req)
    let settled = false
    let off: (() => void) | undefined
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
      if (!res.headersSent) res.setHeader('connection', 'close')
      finish(reason)
    })
    if (!settled) parse(req, res, finish)
  }
}

function verifyUtf8(_req: IncomingMessage, _res: unknown, body: Buffer, encoding: string): void {
  if (/^utf-?8$/i.test(encoding) && !isUtf8(body)) {
    throw Object.assign(new Error('the body is not valid UTF-8'), { type: INVALID_UTF8 })
  }
}

/**
 * A Content-Length over the limit on an uncompressed body (a compressed one's
 * limit applies to what it inflates to, which its length does not tell).
 */
function declaredTooLarge(req: IncomingMessage, limitBytes: number): boolean {
  const declared = req.headers['content-length']
  if (declared === undefined) return false
  const encoding = req.headers['content-encoding']
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') return false
  return Number(declared) > limitBytes
}
