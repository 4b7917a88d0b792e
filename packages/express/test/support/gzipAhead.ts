import { createGzip } from 'node:zlib'
import type { RequestHandler, Response } from 'express'

/**
 * A stand-in for the `compression` package mounted ahead of `deadline()`,
 * with its mechanism: it replaces `res.end` (and `res.write`), writes the
 * head when the body starts (`content-encoding: gzip`, no length, so the
 * body goes chunked), hands the body to zlib and calls Node's `end` only
 * once zlib's output has been written — which, for a client reading slowly,
 * waits for the socket to drain. Here the output waits for `drained`: the
 * client has read what was ahead of it. With `firstPart`, the first half of
 * the output goes when it resolves (a slow reader's download, moving).
 */
export function gzipAhead(drained: Promise<void>, firstPart?: Promise<void>): RequestHandler {
  return (_req, res, next) => {
    const write = res.write as (this: Response, chunk: Buffer) => boolean
    const end = res.end as (this: Response) => Response
    const gzip = createGzip()
    const out: Buffer[] = []
    let ended = false
    gzip.on('data', (chunk: Buffer) => out.push(chunk))
    gzip.on('end', () => {
      const output = Buffer.concat(out)
      const half = firstPart === undefined ? 0 : output.length >> 1
      void firstPart?.then(() => write.call(res, output.subarray(0, half)))
      void drained.then(() => {
        write.call(res, output.subarray(half))
        end.call(res)
      })
    })
    const head = (): void => {
      if (res.headersSent) return
      res.removeHeader('content-length')
      res.setHeader('content-encoding', 'gzip')
      res.writeHead(res.statusCode)
    }
    res.write = function gzipWrite(chunk: unknown): boolean {
      if (ended) return false
      head()
      return gzip.write(chunk as Buffer)
    } as Response['write']
    res.end = function gzipEnd(chunk?: unknown): Response {
      if (ended) return res
      ended = true
      head()
      if (chunk !== undefined && typeof chunk !== 'function') gzip.end(chunk as Buffer)
      else gzip.end()
      return res
    } as Response['end']
    next()
  }
}
