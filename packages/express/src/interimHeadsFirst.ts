import type { ServerResponse } from 'node:http'
import { interim, type Pending } from './writeExpired.js'

/**
 * At a pipelined response's turn (its 'socket' event, just before Node
 * flushes what it held for it), puts the interim heads it buffered while
 * queued — a `103 Early Hints` the route wrote, the `100 Continue`
 * `deadline()` wrote ahead of a read of the body — back in front of its own
 * head. Node stores a head sent with a Buffer body (`res.json`, `res.send`:
 * Express turns the body into one to tag it) by putting it first in that
 * buffer (`_send`'s `unshift`), ahead of the interim heads already there:
 * `respond`'s `res.status(504).json(…)` went out as a 504 whose
 * `Content-Length` counted the 103's bytes as its body, and everything after
 * it on the connection (the rest of its body, every answer pipelined behind
 * it) was read as garbage. A head written with a string body (the plain 504)
 * goes in with it, in order: nothing to move then.
 */
export function interimHeadsFirst(res: ServerResponse): void {
  const out = res as ServerResponse & { outputData?: Pending[]; _header?: unknown }
  const pending = out.outputData
  if (!Array.isArray(pending) || pending.length < 2) return
  const head = pending[0] as Pending
  if (typeof out._header !== 'string' || head.data !== out._header) return
  let interims = 0
  while (interims + 1 < pending.length && interim(pending[interims + 1] as Pending)) interims++
  if (interims === 0) return
  pending.splice(0, 1)
  pending.splice(interims, 0, head)
}
