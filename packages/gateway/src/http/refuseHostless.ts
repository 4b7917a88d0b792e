import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { LogLevel } from '../log/GatewayLogger.js'
import { closeAfterAnswer } from './closeAfterAnswer.js'
import { hasBody } from './readBody.js'
import { REQUEST_ID_HEADER } from './requestScope.js'
import { sendJson } from './sendJson.js'

/**
 * An HTTP/1.1 request without a `Host` header, which RFC 9112 §3.2 has a
 * server answer with a 400 (HTTP/1.0 has no such rule: served as usual).
 * The check Node makes itself by default (`requireHostHeader`), ahead of
 * every listener; `startGateway` turns Node's off and makes it here.
 */
export function lacksHost(req: IncomingMessage): boolean {
  return req.httpVersionMajor === 1 && req.httpVersionMinor === 1 && req.headers.host === undefined
}

/**
 * Answers a request `lacksHost` found. Node's own answer was a bare `400 Bad
 * Request`, an empty body, no `x-request-id`, no log line — a refusal
 * nobody could trace, as a request its parser cannot read was before
 * `refuseUnparsed`. Answered as that one is: OpenAI's error shape naming
 * the missing header, a new id, the connection closed (a body, unread, is
 * read and dropped for a while first, so a client still uploading gets the
 * answer rather than a reset), and one `request` line; not counted in
 * `/metrics`, as no API path was served.
 */
export function refuseHostless(
  res: ServerResponse,
  log: (level: LogLevel, event: string, fields: Record<string, unknown>) => void,
): void {
  const id = randomUUID()
  res.setHeader(REQUEST_ID_HEADER, id)
  if (hasBody(res.req)) closeAfterAnswer(res)
  else res.setHeader('connection', 'close')
  sendJson(res, 400, {
    error: {
      message: 'an HTTP/1.1 request must have a Host header (RFC 9112 §3.2): nothing was sent',
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_request',
    },
  })
  log('info', 'request', {
    requestId: id,
    status: 400,
    error: 'invalid_request',
    reason: 'missing_host',
  })
}
