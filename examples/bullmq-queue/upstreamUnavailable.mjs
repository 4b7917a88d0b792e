// Test support (upstreamUnavailable.timing.test.ts), loaded with
// `node --import` before the example: its upstream answers every call at once
// with a 503 (it is overloaded), where the example's answers slowly but never
// fails.
import { Server } from 'node:http'

const emit = Server.prototype.emit
Server.prototype.emit = function (event, req, res, ...rest) {
  if (event !== 'request' || req.url !== '/generate')
    return emit.call(this, event, req, res, ...rest)
  res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"overloaded"}')
  return true
}
