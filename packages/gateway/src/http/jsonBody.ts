import { isUtf8 } from 'node:buffer'
import type { IncomingMessage } from 'node:http'
import express, { type RequestHandler } from 'express'
import { INVALID_UTF8 } from './bodyError.js'

/**
 * The JSON body parser of `POST /v1/chat/completions`: bodies up to
 * `limitBytes` (larger: 413), gzip/deflate/br decoded (corrupt: 400), and
 * UTF-8 checked strictly — decoding would otherwise turn invalid bytes into
 * U+FFFD and send the provider text the client never wrote (400 instead).
 */
export function jsonBody(limitBytes: number): RequestHandler {
  return express.json({ limit: limitBytes, verify: verifyUtf8 })
}

function verifyUtf8(_req: IncomingMessage, _res: unknown, body: Buffer, encoding: string): void {
  if (/^utf-?8$/i.test(encoding) && !isUtf8(body)) {
    throw Object.assign(new Error('the body is not valid UTF-8'), { type: INVALID_UTF8 })
  }
}
