import type { AddressInfo } from 'node:net'
import { createServer, type Server, type Socket } from 'node:net'
import { clearTimeout as realClearTimeout, setTimeout as realSetTimeout } from 'node:timers'
import { refuseUnknownOptions } from '@hourglass/core'

export interface TcpFaultServerOptions {
  /**
   * `silent` accepts the connection and never sends a byte (a TLS handshake
   * that never completes); `reset` accepts, then resets after `afterMs`.
   */
  mode: 'silent' | 'reset'
  /** For `reset`: ms after accepting; default 0. */
  afterMs?: number
}

export interface TcpFaultServer {
  readonly port: number
  /** `https://127.0.0.1:<port>`: the handshake is what misbehaves. */
  readonly httpsUrl: string
  readonly openConnections: number
  /** Resolves once no connection is open (at once if none is). */
  idle(): Promise<void>
  close(): Promise<void>
}

/** A raw TCP listener on loopback that accepts and then says nothing (or resets). */
export async function tcpFaultServer(options: TcpFaultServerOptions): Promise<TcpFaultServer> {
  // Unchecked, `{ mode: 'rest', afterMS: 5 }` was a silent server: a test of
  // a slow connect failure saw a handshake that never completes instead.
  refuseUnknownOptions(options, OPTION_NAMES, 'tcpFaultServer()')
  const { mode, afterMs } = (options ?? {}) as Partial<TcpFaultServerOptions>
  if (mode !== 'silent' && mode !== 'reset') {
    const got: unknown = mode
    throw new TypeError(
      `tcpFaultServer: mode must be 'silent' or 'reset', got ${typeof got === 'string' ? JSON.stringify(got.slice(0, 40)) : String(got)}`,
    )
  }
  if (
    afterMs !== undefined &&
    !(typeof afterMs === 'number' && Number.isFinite(afterMs) && afterMs >= 0)
  ) {
    throw new TypeError(
      `tcpFaultServer: afterMs must be a number of ms ≥ 0, got ${String(afterMs)}`,
    )
  }
  const sockets = new Set<Socket>()
  let idleWaiters: (() => void)[] = []
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    // Read and drop what arrives, so a client's FIN is seen and the socket closes.
    socket.resume()
    socket.once('close', () => {
      sockets.delete(socket)
      if (sockets.size > 0) return
      const waiters = idleWaiters
      idleWaiters = []
      for (const resolve of waiters) resolve()
    })
    if (mode === 'reset') {
      // No `afterMs` is at once: `node:timers`' own setTimeout, not the
      // global one fake timers replace (and hold back until time moves).
      const at = afterMs ?? 0
      const timer =
        at > 0
          ? setTimeout(() => socket.resetAndDestroy(), at)
          : realSetTimeout(() => socket.resetAndDestroy(), 0)
      socket.once('close', () => (at > 0 ? clearTimeout(timer) : realClearTimeout(timer)))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    port,
    httpsUrl: `https://127.0.0.1:${port}`,
    get openConnections() {
      return sockets.size
    },
    idle() {
      if (sockets.size === 0) return Promise.resolve()
      return new Promise<void>((resolve) => idleWaiters.push(resolve))
    },
    close() {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

const OPTION_NAMES = Object.keys({
  mode: true,
  afterMs: true,
} satisfies Record<keyof TcpFaultServerOptions, true>)
