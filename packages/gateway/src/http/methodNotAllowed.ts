import type { Request, Response } from 'express'
import { closeAfterAnswer } from './closeAfterAnswer.js'
import { bodyStillOwed } from './readBody.js'
import { scopeOf } from './requestScope.js'
import { sendJson } from './sendJson.js'

/**
 * A path the gateway serves, asked with a method it does not serve there:
 * 405 with `Allow`, in OpenAI's error shape (OpenAI answers
 * `GET /v1/chat/completions` 405 too). A 404 said the route was missing, and
 * an operator reading the log of a client that sends `PUT` went looking for
 * a mount or a proxy path that was fine. `OPTIONS` too: Express's own answer
 * (200, `text/plain` "POST") was counted in the metrics with no log line and
 * not in the shape every other answer has; the gateway serves no CORS, so a
 * preflight fails either way (an app that serves CORS answers it ahead of
 * the router). Mounted after the path's own routes: `HEAD` of a `GET` route
 * is answered there first.
 */
export function methodNotAllowed(
  allow: readonly string[],
  answered: (req: Request, status: number, error: string) => void,
) {
  const allowed = allow.join(', ')
  return (req: Request, res: Response): void => {
    // Its body is read by nobody: the last answer on the connection.
    if (bodyStillOwed(req)) closeAfterAnswer(res)
    const scope = scopeOf(res)
    if (scope !== undefined) scope.errorCode ??= 'method_not_allowed'
    res.setHeader('allow', allowed)
    sendJson(res, 405, {
      error: {
        message: `${req.method.slice(0, 20)} is not allowed here (allowed: ${allowed})`,
        type: 'invalid_request_error',
        param: null,
        code: 'method_not_allowed',
      },
    })
    // The request's one log line: the refused method is the operator's news.
    answered(req, 405, 'method_not_allowed')
  }
}
