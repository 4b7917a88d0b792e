import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Express } from 'express'

export interface Listening {
  url: string
  port: number
  close(): Promise<void>
}

/** Serve an Express app (default: on 127.0.0.1, a free port); `close()` drops every connection. */
export async function listen(app: Express, port = 0, host = '127.0.0.1'): Promise<Listening> {
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(port, host, (error?: Error) => (error ? reject(error) : resolve(s)))
  })
  const address = server.address() as AddressInfo
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
