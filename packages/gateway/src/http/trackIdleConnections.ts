import type { Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

interface Connection {
  /** Responses of this connection not yet closed (a pipelined one waits its turn). */
  open: number
  /**
   * `bytesRead` when its last response closed: more since is a request on
   * its way. -1 before any: a connection is opened to send one (Node's own
   * sweep leaves it too, to its `headersTimeout`).
   */
  quietAt: number
}

/**
 * Makes `server.closeIdleConnections()` — which `server.close()` runs — close
 * only connections that are truly between requests: one answered before,
 * no response open (a whole answer still queued for a client that has not
 * read it yet is open), and nothing read since the last one closed (a
 * request arriving). Returns what the request handler calls for each
 * response it is given.
 *
 * Node's own (20 and later) skips a connection only while its response is
 * not `finished`, and `finished` is true from `res.end()`, however much of
 * the answer is still queued in the socket: `close()` destroyed a large
 * answer the client had not read yet, and the drain, seeing its response
 * close, counted it as drained.
 */
export function trackIdleConnections(server: Server): (res: ServerResponse) => void {
  const connections = new Map<Socket, Connection>()
  server.on('connection', (socket: Socket) => {
    connections.set(socket, { open: 0, quietAt: -1 })
    socket.once('close', () => connections.delete(socket))
  })
  server.closeIdleConnections = () => {
    for (const [socket, connection] of connections) {
      if (connection.open === 0 && socket.bytesRead === connection.quietAt) socket.destroy()
    }
  }
  return (res) => {
    // The request's: a response pipelined behind another has no socket yet.
    const socket = res.req.socket
    const connection = connections.get(socket)
    if (connection === undefined) return
    connection.open++
    // After 'finish' (the whole answer handed to the OS), or the connection's end.
    res.once('close', () => {
      connection.open--
      connection.quietAt = socket.bytesRead
    })
  }
}
