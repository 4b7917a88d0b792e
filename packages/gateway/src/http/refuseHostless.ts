import type { IncomingMessage, ServerResponse } from 'node:http'
import type { LogLevel } from '../log/GatewayLogger.js'
import { closeAfterAnswer } from './closeAfterAnswer.js'
import { pathOf } from './pathOf.js'
import { REQUEST_ID_HEADER, requestIdFrom } from './requestScope.js'
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
 * the missing header, the connection closed (a body, unread, is read and
 * dropped for a while first, so a client still uploading gets the answer
 * rather than a reset; a request pipelined behind it is not served: no
 * answer would follow this one), and one `request` line; not counted in
 * `/metrics`, as no API path was served. Unlike that one its headers were
 * read: the client's `x-request-id` is kept, as on every other answer, and
 * the line names its path and method.
 */
export function refuseHostless(
  res: ServerResponse,
  log: (level: LogLevel, event: string, fields: Record<string, unknown>) => void,
): void {
  const req = res.req
  const id = requestIdFrom(req.headers[REQUEST_ID_HEADER])
  res.setHeader(REQUEST_ID_HEADER, id)
  closeAfterAnswer(res)
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
    path: pathOf(req),
    method: req.method,
    status: 400,
    error: 'invalid_request',
    reason: 'missing_host',
  })
}
