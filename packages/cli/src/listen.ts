import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Express } from 'express'

export interface Listening {
  url: string
  port: number
  /**
   * Stops taking connections; requests in flight get up to `drainMs`
   * (default 0: none) to be answered, then every connection is dropped.
   */
  close(drainMs?: number): Promise<void>
}

/** Serve an Express app (default: on 127.0.0.1, a free port). */
export async function listen(app: Express, port = 0, host = '127.0.0.1'): Promise<Listening> {
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(port, host, (error?: Error) => (error ? reject(error) : resolve(s)))
  })
  // Counted per request, not per connection: a keep-alive connection between
  // requests holds nothing to wait for.
  let inFlight = 0
  let drained = () => {}
  server.on('request', (_req, res) => {
    inFlight++
    res.once('close', () => {
      if (--inFlight === 0) drained()
    })
  })
  const address = server.address() as AddressInfo
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    close: (drainMs = 0) =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeIdleConnections()
        let timer: NodeJS.Timeout | undefined
        const cut = () => {
          clearTimeout(timer)
          drained = () => {}
          server.closeAllConnections()
        }
        if (inFlight === 0 || drainMs <= 0) return cut()
        drained = cut
        timer = setTimeout(cut, drainMs)
      }),
  }
}
