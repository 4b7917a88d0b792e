import type { IncomingMessage } from 'node:http'
import type { Transform } from 'node:stream'
import * as zlib from 'node:zlib'
import { quoted } from '@hourglass/core'

/** What `readBody` hands back: the whole body (decoded), or an error shaped as body-parser's (`type`, `status`). */
export type BodyCallback = (error: BodyError | undefined, body?: Buffer) => void

export type BodyError = Error & { type?: string; status: number; code?: string }

/**
 * Reads a request body to a Buffer, decoding gzip, deflate, br (and zstd
 * where Node has it), and stops at `limitBytes` — counted both as sent and
 * as inflated — with a 413 error (`entity.too.large`) the moment either
 * passes it, without reading further. (body-parser, asked the same, read
 * the whole upload before its 413, or waited on one that kept coming until
 * the deadline: a 413 only once nothing was left to refuse.) After an error
 * nothing more is collected: what the client still sends flows to nowhere,
 * and the caller closes the connection after its answer. Returns a stop
 * function (the deadline ran out): `done` is then not called.
 */
export function readBody(req: IncomingMessage, limitBytes: number, done: BodyCallback): () => void {
  const coding = codingOf(req)
  let decoder: Transform | undefined
  if (coding !== 'identity') {
    decoder = decoderFor(coding)
    if (decoder === undefined) {
      done(
        bodyFailure(
          415,
          'encoding.unsupported',
          `unsupported Content-Encoding ${quoted(coding, 40)}: send identity, gzip, deflate or br (zstd on Node 22.15 and later)`,
        ),
      )
      return noop
    }
  }
  const chunks: Buffer[] = []
  let sent = 0
  let inflated = 0
  let settled = false

  const cleanUp = () => {
    settled = true
    req.off('data', onSent)
    req.off('end', onSentEnd)
    req.off('error', onAborted)
    req.off('close', onAborted)
    if (decoder !== undefined) {
      decoder.off('data', onInflated)
      decoder.off('end', onDecoded)
      decoder.destroy()
    }
    chunks.length = 0
  }
  const fail = (error: BodyError) => {
    if (settled) return
    cleanUp()
    // Flowing with no listener: the rest of the upload is read and dropped
    // (until the connection closes after the answer), never buffered.
    req.resume()
    done(error)
  }
  const succeed = () => {
    if (settled) return
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)
    cleanUp()
    done(undefined, body)
  }
  const tooLarge = () => fail(tooLargeFailure(limitBytes))

  function onSent(chunk: Buffer) {
    sent += chunk.length
    if (sent > limitBytes) return tooLarge()
    if (decoder === undefined) chunks.push(chunk)
    else decoder.write(chunk)
  }
  function onSentEnd() {
    if (decoder === undefined) succeed()
    else decoder.end()
  }
  function onInflated(chunk: Buffer) {
    inflated += chunk.length
    if (inflated > limitBytes) return tooLarge()
    chunks.push(chunk)
  }
  function onDecoded() {
    succeed()
  }
  function onAborted() {
    if (!req.complete) fail(bodyFailure(400, 'request.aborted', 'request aborted'))
  }

  if (decoder !== undefined) {
    decoder.on('data', onInflated)
    decoder.on('end', onDecoded)
    // zlib's own error (Z_DATA_ERROR, ERR__ERROR_*…), kept with its code: the client's bytes are corrupt.
    decoder.on('error', (error: Error) => fail(Object.assign(error, { status: 400 })))
  }
  req.on('data', onSent)
  req.on('end', onSentEnd)
  req.on('error', onAborted)
  req.on('close', onAborted)
  return () => {
    if (settled) return
    cleanUp()
    req.resume()
  }
}

/**
 * The Content-Encoding, lower-cased: `identity` for none or an empty one (a
 * list of no codings, as body-parser reads it; it was a 415 naming `""`).
 */
export function codingOf(req: IncomingMessage): string {
  return (req.headers['content-encoding'] || 'identity').toLowerCase()
}

function decoderFor(coding: string): Transform | undefined {
  switch (coding) {
    case 'gzip':
    // RFC 9110 §8.4.1.3: a recipient SHOULD read `x-gzip` as `gzip`. (Its
    // `x-compress` names `compress`, LZW, which zlib does not decode: a 415.)
    case 'x-gzip':
      return zlib.createGunzip()
    case 'deflate':
      return zlib.createInflate()
    case 'br':
      return zlib.createBrotliDecompress()
    case 'zstd': {
      // Node 22.15+ only.
      const create = (zlib as { createZstdDecompress?: () => Transform }).createZstdDecompress
      return create?.()
    }
    default:
      return undefined
  }
}

/**
 * As type-is's `hasBody`: a Transfer-Encoding, or a Content-Length that is a
 * number. (A request without one has no body: Node has it complete as soon as
 * its headers are parsed, though `req.complete` says so only once its
 * handlers have run.)
 */
export function hasBody(req: IncomingMessage): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined &&
      !Number.isNaN(Number(req.headers['content-length'])))
  )
}

/**
 * Whether `req`'s body is still owed: one declared (`hasBody`) and not
 * empty (`Content-Length: 0` owes nothing: Python's `requests.post(url)`,
 * `curl -d ''`), not all read yet. A body nobody will read makes the answer
 * the last on its connection (`closeAfterAnswer`); an empty one left a
 * 405 or 404 closing a keep-alive connection, and a request pipelined
 * behind it unserved.
 */
export function bodyStillOwed(req: IncomingMessage): boolean {
  return !req.complete && hasBody(req) && Number(req.headers['content-length']) !== 0
}

export function bodyFailure(status: number, type: string, message: string): BodyError {
  return Object.assign(new Error(message), { status, type })
}

/** A body past `limitBytes`, with the limit as body-parser's error carries it (`limit`). */
export function tooLargeFailure(limitBytes: number): BodyError {
  return Object.assign(bodyFailure(413, 'entity.too.large', 'request entity too large'), {
    limit: limitBytes,
  })
}

function noop(): void {}
