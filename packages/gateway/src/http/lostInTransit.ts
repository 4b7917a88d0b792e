import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/** Responses whose connection failed with part of their answer still waiting to go. */
const lost = new WeakSet<ServerResponse>()

/**
 * Watches `res`'s connection while its end waits to be taken; returns the
 * release. A client that resets the connection with part of the answer
 * still queued in Node never gets it, yet Node says 'finish' all the same:
 * the queued writes are cancelled and their callbacks end the response as
 * if it had been handed to the OS. So the connection's failure is judged
 * when it happens: only if answer bytes were still waiting to go then was
 * the answer lost. Whether the socket has an error by 'finish' says nothing:
 * a client that took the whole answer and then closed can fail the empty
 * write that carries Node's 'finish' (EPIPE, ECONNRESET) after every byte
 * went. A failure Node only meets in a write (EPIPE after a clean close
 * while bytes were queued) is reported after 'finish', its bytes already
 * dropped from the counts: that answer still reads as delivered.
 */
export function watchTransit(res: ServerResponse): () => void {
  const connection = res.req?.socket as WatchedSocket | null | undefined
  if (connection == null || connection.destroyed) return noop
  // One listener per connection, whatever the number of answers pipelined
  // on it waiting their turn: one each passed Node's limit of 10 (a client
  // pipelining a dozen unread requests printed MaxListenersExceededWarning).
  let watch = watches.get(connection)
  if (watch === undefined) {
    // Held now: Node drops it from the socket as it destroys it, before
    // the error is emitted; libuv empties its queue only later, as it
    // closes it.
    const handle = connection._handle
    const responses = new Set<ServerResponse>()
    const onError = () => {
      // libuv's queue: what the OS has not taken. `writableLength` would
      // also count the part of a write already taken, until the whole is.
      const queued =
        typeof handle?.writeQueueSize === 'number'
          ? handle.writeQueueSize
          : connection.writableLength
      if (queued <= 0) return
      for (const watched of responses) if (!watched.writableFinished) lost.add(watched)
    }
    watch = { responses, onError }
    watches.set(connection, watch)
    connection.on('error', onError)
  }
  const { responses, onError } = watch
  responses.add(res)
  return () => {
    responses.delete(res)
    if (responses.size > 0) return
    connection.off('error', onError)
    watches.delete(connection)
  }
}

type WatchedSocket = Socket & { _handle?: { writeQueueSize?: unknown } | null }

/** Each watched connection's one listener and the answers it watches. */
const watches = new WeakMap<
  WatchedSocket,
  { responses: Set<ServerResponse>; onError: () => void }
>()

/** `res`'s connection failed while part of its answer was still queued (see `watchTransit`). */
export function lostInTransit(res: ServerResponse): boolean {
  return lost.has(res)
}

function noop(): void {}
