/** Where a connect went, as the connector names it in its errors. */
export interface ConnectTarget {
  /** The name (or IP address) in the URL. */
  hostname: string
  /** The port connected to (the URL's, else 80 or 443). */
  port: number | undefined
  /** The Unix socket (or Windows pipe) connected to in place of the host's port (an Agent's `socketPath`). */
  socketPath?: string | undefined
}

/** `svc.test:443`, `[::1]:8080`, or the socket path; undefined when nothing names it. */
export function describeTarget(target: {
  hostname?: string | undefined
  port?: number | undefined
  socketPath?: string | undefined
}): string | undefined {
  if (target.socketPath !== undefined) return target.socketPath
  const { hostname, port } = target
  if (hostname === undefined) return undefined
  const name = hostname.includes(':') ? `[${hostname}]` : hostname
  return port === undefined ? name : `${name}:${port}`
}
