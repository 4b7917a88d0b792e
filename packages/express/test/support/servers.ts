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

export interface Recording<T> {
  messages: T[]
  /** Resolves once `count` messages have been published. */
  count(count: number): Promise<void>
  stop(): void
}

/** Collect every message published on a diagnostics channel until `stop()`. */
export function record<T>(name: string): Recording<T> {
  const messages: T[] = []
  const waiting: Array<{ count: number; resolve: () => void }> = []
  const listener = (message: unknown) => {
    messages.push(message as T)
    for (const w of waiting.filter((w) => messages.length >= w.count)) {
      waiting.splice(waiting.indexOf(w), 1)
      w.resolve()
    }
  }
  diagnostics.subscribe(name, listener)
  return {
    messages,
    count: (count) =>
      messages.length >= count
        ? Promise.resolve()
        : new Promise((resolve) => waiting.push({ count, resolve })),
    stop: () => diagnostics.unsubscribe(name, listener),
  }
}

/** `Promise.withResolvers` for Node 20. */
export function deferred<T = void>(): {
  promise: Promise<T>
  resolve: (value: T) => void
} {
  let resolve: (value: T) => void = () => {}
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/** Resolves once `signal` aborts. */
export function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
}
