import type { Socket } from 'node:net'

/** A libuv stream handle as Node's net and tls modules keep it (`socket._handle`). */
interface StreamHandle {
  writeQueueSize?: unknown
  /** A TLS socket's handle wraps the TCP handle it writes to (`_tls_wrap.js`). */
  _parent?: { writeQueueSize?: unknown } | null
}

/**
 * Bytes written to `socket` that Node still holds: its stream buffer, and
 * what libuv has queued but the kernel has not taken yet. An upload held in
 * memory is one `socket.write`: `writableLength` counts all of it until the
 * kernel has taken the last byte, so only libuv's queue (`writeQueueSize`,
 * not in Node's documented API) shrinks as the peer reads. A TLS socket's
 * own queue holds the whole record stream until then; its TCP handle's
 * shrinks. Without those fields (another runtime) this is `writableLength`
 * alone: a single write is then seen moving only when it is done.
 */
export function queuedBytes(socket: Socket): number {
  const handle = (socket as unknown as { _handle?: StreamHandle | null })._handle
  return (
    socket.writableLength + size(handle?.writeQueueSize) + size(handle?._parent?.writeQueueSize)
  )
}

function size(value: unknown): number {
  return typeof value === 'number' ? value : 0
}
