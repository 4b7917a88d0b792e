import { ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT } from './attributes.js'

/** grpc-js's own target grammar (its uri-parser): scheme, `//authority/`, path. */
const URI = /^(?:([A-Za-z0-9+.-]+):)?(?:\/\/([^/]*)\/)?(.+)$/
const DIGITS = /^\d+$/
/** The port grpc-js connects to when a `dns:` or IP target names none (its resolvers' DEFAULT_PORT). */
const GRPC_DEFAULT_PORT = 443

/**
 * A gRPC client call's `server.address` and `server.port`, from its channel's
 * target as grpc-js names it (`@hourglass/grpc`'s `client-start`), as the
 * gRPC conventions ask: from the channel's configuration, never the
 * connection (one group of servers, not one attribute value per pod).
 *
 * - `dns:` (and a bare `host:port`): the host, and the port — grpc-js's
 *   default, 443, when the target names none (`dns:///api.example.com`):
 *   the port it connects to, which the conventions require wherever the
 *   transport has ports, and one server is one series whether its target
 *   spells 443 or not. An authority (`dns://8.8.8.8/host:port`, the DNS
 *   server to ask) is not the server.
 * - `xds:`: the host, and the port only when the target names one (the
 *   control plane gives the rest).
 * - `ipv4:`, `ipv6:`: the address and port (443 when none is named); a list
 *   of several is the whole target, with no port.
 * - `unix:`: the socket's path, as grpc-js resolves it (`unix:///run/a.sock`
 *   is `/run/a.sock`), with no port.
 * - Any other scheme (`zk://zookeeper:2181/my-server`), or one whose host
 *   cannot be read: the whole target, with no port.
 *
 * Nothing for a call with no target (refused unsent), nor for one that is
 * not a string: a strange target never fails the call's telemetry.
 */
export function grpcTargetServer(target: unknown): Record<string, string | number> {
  if (typeof target !== 'string' || target === '') return {}
  const uri = URI.exec(target)
  if (uri === null) return {}
  const [, scheme, authority, path = ''] = uri
  const whole = { [ATTR_SERVER_ADDRESS]: target }
  switch (scheme) {
    case 'dns':
      return hostAndPort(path, GRPC_DEFAULT_PORT) ?? whole
    case 'xds':
      return hostAndPort(path) ?? whole
    case 'ipv4':
    case 'ipv6':
      return path.includes(',') ? whole : (hostAndPort(path, GRPC_DEFAULT_PORT) ?? whole)
    case 'unix':
      return { [ATTR_SERVER_ADDRESS]: authority === '' ? `/${path}` : path }
    case undefined:
      return hostAndPort(target, GRPC_DEFAULT_PORT) ?? whole
    default:
      // grpc-js reads a target whose scheme it has no resolver for as a
      // `dns:` name: `localhost:50051` parses as scheme `localhost`.
      return (authority === undefined ? hostAndPort(target, 'required') : undefined) ?? whole
  }
}

/**
 * grpc-js's `splitHostPort`: `[v6]:port`, `[v6]`, `host:port`, `host`, or a
 * bare IPv6 address (several colons, no port). Undefined for one with no
 * host, a host that is a path, or a port that is no port. With no port
 * named: `defaultPort`'s, none, or undefined (`'required'`).
 */
function hostAndPort(
  text: string,
  defaultPort?: number | 'required',
): Record<string, string | number> | undefined {
  let host = text
  let port: string | undefined
  if (text.startsWith('[')) {
    const end = text.indexOf(']')
    if (end === -1) return undefined
    host = text.slice(1, end)
    if (!host.includes(':')) return undefined
    const rest = text.slice(end + 1)
    if (rest !== '') {
      if (!rest.startsWith(':')) return undefined
      port = rest.slice(1)
    }
  } else {
    const parts = text.split(':')
    if (parts.length === 2) {
      host = parts[0] as string
      port = parts[1] as string
    }
  }
  if (host === '' || host.includes('/')) return undefined
  if (port === undefined) {
    if (defaultPort === 'required') return undefined
    return defaultPort === undefined
      ? { [ATTR_SERVER_ADDRESS]: host }
      : { [ATTR_SERVER_ADDRESS]: host, [ATTR_SERVER_PORT]: defaultPort }
  }
  const number = DIGITS.test(port) ? Number(port) : Number.NaN
  if (!(number >= 1 && number <= 65535)) return undefined
  return { [ATTR_SERVER_ADDRESS]: host, [ATTR_SERVER_PORT]: number }
}
