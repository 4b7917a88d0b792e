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
      notAnObject(error) ??
      (expose === true && typeof message === 'string' ? message : 'the request could not be read'),
  })
}

/**
 * The problem with a body that is valid JSON but no object or array
 * (`"why?"`, `null`, `5`), which express.json() refuses (its strict mode):
 * its own message, `Unexpected token 'n', "null" is not valid JSON`, said
 * the JSON was invalid, and sent the caller looking for a typo that is not there.
 */
function notAnObject(error: unknown): string | undefined {
  const { type, body } = (error ?? {}) as { type?: unknown; body?: unknown }
  if (type !== 'entity.parse.failed' || typeof body !== 'string') return undefined
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    // Not JSON at all: the parser's message says so, and where.
    return undefined
  }
  if (typeof value === 'object' && value !== null) return undefined
  const kind = value === null ? 'null' : `a ${typeof value}`
  return `the body must be a JSON object, as {"question":"why?"}; got ${kind}`
}
