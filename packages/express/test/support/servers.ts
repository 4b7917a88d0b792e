import './cjsIsPromise.js'
import diagnostics from 'node:diagnostics_channel'
import { once } from 'node:events'
import type { AddressInfo, Socket } from 'node:net'
import express, { type Express, type NextFunction, type Request, type Response } from 'express'
import express4 from 'express4'
import { Agent } from 'undici'

type Handler = (req: Request, res: Response, next: NextFunction) => unknown

/**
 * Both majors, each with how it runs an async handler: Express 5 routes a
 * rejection to the error handlers itself; Express 4 needs the `.catch(next)`
 * everyone writes by hand.
 */
export const majors = [
  {
    name: 'express 5',
    app: (): Express => express(),
    json: express.json,
    route: (fn: Handler): Handler => fn,
  },
  {
    name: 'express 4',
    app: (): Express => express4(),
    json: express4.json,
    route:
      (fn: Handler): Handler =>
      (req, res, next) => {
        Promise.resolve(fn(req, res, next)).catch(next)
      },
  },
] as const

export interface Running {
  url: string
  /** Every TCP connection the server accepted, in order. */
  connections: Socket[]
  close(): Promise<void>
}

/** Listen on 127.0.0.1, port 0; `close` drops every connection. */
export async function listen(
  handler: Express | ((req: never, res: never) => void),
): Promise<Running> {
  const { createServer } = await import('node:http')
  const server = createServer(handler as Parameters<typeof createServer>[0] & object)
  const connections: Socket[] = []
  server.on('connection', (socket: Socket) => connections.push(socket))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    connections,
    async close() {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  }
}

/** A keep-alive client; `connections: 1` makes every request share one socket. */
export function client(options: Agent.Options = {}): Agent {
  return new Agent({ keepAliveTimeout: 30_000, ...options })
}

/** Collect every message published on a diagnostics channel until `stop()`. */
export function record<T>(name: string): { messages: T[]; stop(): void } {
  const messages: T[] = []
  const listener = (message: unknown) => {
    messages.push(message as T)
  }
  diagnostics.subscribe(name, listener)
  return { messages, stop: () => diagnostics.unsubscribe(name, listener) }
}

/** Resolves once `signal` aborts. */
export function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
}
