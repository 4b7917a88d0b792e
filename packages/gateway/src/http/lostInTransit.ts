import type { ServerResponse } from 'node:http'

/**
 * The response was ended whole, but its connection failed before the client
 * took all of it: the client reset it (left) with part of the answer still
 * queued in Node. Node then emits 'finish' all the same — the failed
 * writes' callbacks end the response as if it had been handed to the OS —
 * so `writableFinished` alone read as delivered a large answer its client
 * never got (logged 200 and counted `2xx`). The request's socket says
 * which: a failed write or read destroys it with its error before those
 * callbacks run, where a delivered answer's connection has none (a
 * `connection: close` end, or the gateway's own cut, destroy it with none).
 */
export function lostInTransit(res: ServerResponse): boolean {
  return res.writableFinished && res.req.socket?.errored != null
}
