import type { ErrorRequestHandler } from 'express'

/**
 * The toolkit edge's last error handler: any failure not already answered
 * (a 504 by `deadlineErrors()`, a 4xx by `clientErrors`) is a one-line JSON
 * 502, as the naive edge answers one, not Express's HTML error page with a
 * stack trace and this machine's file paths. The edge's only work is calling
 * the api service, so what fails there is that hop: an answer that is not
 * JSON (the api service's own error page, say) failed to parse, and
 * `demo --serve` printed the parser's stack to whoever ran the curl command.
 */
export const upstreamErrors: ErrorRequestHandler = (error, _req, res, next) => {
  if (res.headersSent) {
    next(error)
    return
  }
  const text = error instanceof Error ? `${error.name}: ${error.message}` : 'the call failed'
  res.status(502).json({ error: 'upstream_failed', cause: text.split('\n')[0] })
}
