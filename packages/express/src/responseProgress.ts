import type { ServerResponse } from 'node:http'
import { isHttp2 } from './isHttp2.js'
import { queued } from './writeExpired.js'

/**
 * A mark of how far a response's bytes have got: a new mark, and the
 * response moved since the last. What `deadline()` reads to keep an answer
 * the handler ended through a middleware ahead (compression flushing to a
 * slow reader) while it moves, and to cut it once it stalls; the same for a
 * started stream the deadline ended (`deadline()`'s and `deadlineErrors()`'s
 * end: see `destroyIfEndStalls`).
 *
 * - HTTP/1: the bytes its socket has been given, and what of them the
 *   socket still holds for the OS (libuv's write queue, the measure Node's
 *   own socket timeout reads to spare a write in progress). Given at once —
 *   a queued answer's megabytes, flushed when its turn comes — they leave
 *   in one write whose end nothing reports until the client has read all
 *   but what the OS buffers: by the bytes given alone, a client still
 *   reading them was taken for one that stopped.
 * - Queued behind another pipelined answer on its connection (no socket
 *   yet): always moving. It waits its turn, a wait that says nothing of it,
 *   and a destroy then took the shared connection (the answer ahead kept,
 *   this one, whole and in time, lost).
 * - HTTP/2: its own stream's — the socket there is the session's, counting
 *   every stream, so a stalled stream was kept as long as a sibling moved.
 *   Each `'drain'` of the stream (room made by the client's reads) and each
 *   change of what it holds unsent.
 */
export function responseProgress(res: ServerResponse): () => string {
  if (!isHttp2(res)) {
    let turn = 0
    return () => {
      if (queued(res)) return `queued ${turn++}`
      const socket = res.socket as (ServerResponse['socket'] & { _handle?: Handle | null }) | null
      return `${socket?.bytesWritten ?? 0} ${socket?._handle?.writeQueueSize ?? 0}`
    }
  }
  const stream = (res as { stream?: NodeJS.EventEmitter & { writableLength?: number } }).stream
  let drains = 0
  // On the request's own stream, gone with it.
  stream?.on('drain', () => drains++)
  return () => `${drains} ${stream?.writableLength ?? 0}`
}

/** A socket's libuv handle: `writeQueueSize`, the bytes a write still holds for the OS. */
type Handle = { writeQueueSize?: number }
