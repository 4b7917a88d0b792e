import type { AddressInfo } from 'node:net'
import express from 'express'
import {
  closeUnstarted,
  createGateway,
  type GatewayOptions,
  type GatewayRouter,
} from './createGateway.js'

export interface StartGatewayOptions extends GatewayOptions {
  /** A config object (validated here) — e.g. from `loadGatewayConfig(path)`. */
  config: unknown
  /** TCP port; 0 picks a free one. Default 8080. */
  port?: number | undefined
  /** Interface to listen on. Default `127.0.0.1` (say `0.0.0.0` to expose it). */
  host?: string | undefined
}

export interface RunningGateway {
  /** `http://host:port` — point an OpenAI client at `${url}/v1`. */
  url: string
  gateway: GatewayRouter
  /**
   * Stops accepting connections, drains (see `GatewayRouter.close`: requests
   * in flight get `drainTimeoutMs`, then are cancelled), closes upstream
   * connections and Redis, then every remaining connection.
   */
  close(): Promise<void>
}

/** A standalone gateway on its own Express app: what `hourglass gateway` runs. */
export async function startGateway(options: StartGatewayOptions): Promise<RunningGateway> {
  const { config, port = 8080, host = '127.0.0.1', ...gatewayOptions } = options
  const gateway = createGateway(config, gatewayOptions)
  // Serve with shared limits from the first request when Redis is reachable; locally otherwise.
  await gateway.ready()
  const app = express()
  app.disable('x-powered-by')
  app.use(gateway)
  app.use((_req, res) => {
    res.status(404).json({
      error: {
        message: 'not found',
        type: 'invalid_request_error',
        param: null,
        code: 'not_found',
      },
    })
  })
  const server = app.listen(port, host)
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve)
      server.once('error', reject)
    })
  } catch (error) {
    await closeUnstarted(gateway)
    throw error
  }
  const address = server.address() as AddressInfo
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${shownHost}:${address.port}`,
    gateway,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeIdleConnections()
      await gateway.close()
      server.closeAllConnections()
      await closed
    },
  }
}
