import type { ErrorRequestHandler } from 'express'

/**
 * A request an edge cannot read (a body that is not JSON, one too large)
 * gets a one-line JSON 4xx naming the problem, not Express's HTML error page
 * with a stack trace: `hourglass demo --serve` invites people to type curl
 * commands, and a typo in the body is the likeliest one. Anything else goes
 * on to Express's own handler, as before.
 */
export const clientErrors: ErrorRequestHandler = (error, _req, res, next) => {
  const { status, expose, message } = (error ?? {}) as {
    status?: unknown
    expose?: unknown
    message?: unknown
  }
  if (typeof status !== 'number' || status < 400 || status > 499 || res.headersSent) {
    next(error)
    return
  }
  res.status(status).json({
    error: 'bad_request',
    message:
      expose === true && typeof message === 'string' ? message : 'the request could not be read',
  })
}
