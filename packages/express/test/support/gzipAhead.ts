import { createGzip } from 'node:zlib'
import type { RequestHandler, Response } from 'express'

/**
 * A stand-in for the `compression` package mounted ahead of `deadline()`,
 * with its mechanism: it replaces `res.end` (and `res.write`), writes the
 * head when the body starts (`content-encoding: gzip`, no length, so the
 * body goes chunked), hands the body to zlib and calls Node's `end` only
 * once zlib's output has been written — which, for a client reading slowly,
 * waits for the socket to drain. Here the output waits for `drained`: the
 * client has read what was ahead of it.
 */
export function gzipAhead(drained: Promise<void>): RequestHandler {
  return (_req, res, next) => {
    const write = res.write as (this: Response, chunk: Buffer) => boolean
    const end = res.end as (this: Response) => Response
    const gzip = createGzip()
    const out: Buffer[] = []
    let ended = false
    gzip.on('data', (chunk: Buffer) => out.push(chunk))
    gzip.on('end', () => {
      void drained.then(() => {
        for (const chunk of out) write.call(res, chunk)
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
