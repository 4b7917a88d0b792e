import { lookup } from 'node:dns/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { type AddressInfo, isIP, isIPv6 } from 'node:net'
import { type Clock, systemClock } from '@hourglass/core'
import type { Request, Response } from 'express'
import {
  closeUnstarted,
  createStandaloneGateway,
  type GatewayOptions,
  type GatewayRouter,
  readyUnlessAborted,
} from './createGateway.js'
import { drainOnSignals } from './drainOnSignals.js'
import { holdSignals } from './holdSignals.js'
import { afterPendingReads, afterWaitingConnections } from './http/afterPendingReads.js'
import { behindLastAnswer, closeAfterAnswer } from './http/closeAfterAnswer.js'
import { internalErrorReply } from './http/errorReply.js'
import { noRouteMessage } from './http/noRouteMessage.js'
import { pathOf } from './http/pathOf.js'
import type { DrainReport } from './http/RequestTracker.js'
import { bodyStillOwed } from './http/readBody.js'
import { refuseConnect } from './http/refuseConnect.js'
import { lacksHost, refuseHostless } from './http/refuseHostless.js'
import { refuseUnparsed } from './http/refuseUnparsed.js'
import { scopeOf } from './http/requestScope.js'
import { sendJson } from './http/sendJson.js'
import { trackIdleConnections } from './http/trackIdleConnections.js'
import type { LogLevel } from './log/GatewayLogger.js'
import { optionError } from './optionError.js'
import { GATEWAY_OPTION_NAMES, refuseUnknownGatewayOptions } from './refuseUnknownGatewayOptions.js'

export interface StartGatewayOptions extends GatewayOptions {
  /** A config object (validated here) — e.g. from `loadGatewayConfig(path)`. */
  config: unknown
  /** TCP port; 0 picks a free one. Default 8080. */
  port?: number | undefined
  /** Interface to listen on. Default `127.0.0.1` (say `0.0.0.0` to expose it). */
  host?: string | undefined
  /**
   * Drain on the first SIGINT, SIGTERM or SIGHUP (`close()`), then let the signal end
   * the process as it would have. Default true; false when the process
   * handles its signals itself (then call `close()` from your handler).
   */
  drainOnSignals?: boolean | undefined
  /**
   * How long a connection is kept open between requests, in ms (Node's
   * `server.keepAliveTimeout`, sent as `Keep-Alive: timeout=N`). Default
   * 65 000: longer than the idle timeout of the load balancers put in front
   * (AWS ALB 60 s), which must close an idle connection before the gateway
   * does — else a request sent on one the gateway has just closed is reset.
   * Node's own default is 5 s. `close()` still closes idle connections at once.
   */
  keepAliveTimeoutMs?: number | undefined
}

export interface RunningGateway {
  /** `http://host:port` — point an OpenAI client at `${url}/v1`. */
  url: string
  gateway: GatewayRouter
  /**
   * The SIGINT, SIGTERM or SIGHUP that arrived while it was starting, when nothing
   * else listened for it: held, and delivered again just after this resolves
   * (to a handler installed right after, or to the drain). Undefined
   * otherwise. The process was told to stop before it was ready: a caller
   * that announces it is listening (a line operators and supervisors read)
   * should not, since the stop comes next.
   */
  signalledWhileStarting: NodeJS.Signals | undefined
  /**
   * Begins the drain at once, then, once what has already arrived is read
   * (a request in a kept-alive connection's buffer, a connection waiting to
   * be accepted: answered the drain's 503), stops accepting connections and
   * closes those kept alive between requests; the drain (see
   * `GatewayRouter.close`: requests in flight — an
   * answer its client has not read yet too — get `drainTimeoutMs`, then are
   * cancelled) ends; then upstream connections and Redis are closed, then
   * every remaining connection. Resolves the drain's report (`gateway.close()`'s): `cutOff >
   * 0` is an unclean stop.
   */
  close(): Promise<DrainReport>
}

/** Every option `startGateway` reads: its own and the gateway's. */
const START_OPTION_NAMES = [
  ...Object.keys({
    config: true,
    port: true,
    host: true,
    drainOnSignals: true,
    keepAliveTimeoutMs: true,
  } satisfies Record<Exclude<keyof StartGatewayOptions, keyof GatewayOptions>, true>),
  ...GATEWAY_OPTION_NAMES,
]

/**
 * A standalone gateway: its router served by a bare `node:http` server — what
 * `hourglass gateway` runs. Not an Express app: the router needs none (it
 * reads and writes Node's own req and res), and an app sets the prototype of
 * every req and res, which on Node 20 leaves each with a hidden class of its
 * own and sends Node's header and write code down its slow paths (16 % of
 * this server's throughput, measured; BENCHMARKS.md §9).
 */
export async function startGateway(options: StartGatewayOptions): Promise<RunningGateway> {
  refuseUnknownGatewayOptions(options, START_OPTION_NAMES, 'startGateway()')
  const {
    config,
    port = 8080,
    host = '127.0.0.1',
    drainOnSignals: onSignals = true,
    keepAliveTimeoutMs = DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
    ...gatewayOptions
  } = options
  // Before the gateway exists: Node refuses a bad port by throwing from
  // listen(), by which time the gateway's Redis client would be connecting
  // (and reconnecting, forever: the process would never exit).
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65_535) {
    throw optionError('startGateway', 'port', 'a whole number from 0 to 65535', port)
  }
  if (typeof host !== 'string' || host === '') {
    throw optionError(
      'startGateway',
      'host',
      'a non-empty string (an address or a host name)',
      host,
    )
  }
  const listenHost = unbracketed(host)
  if (typeof onSignals !== 'boolean') {
    throw optionError('startGateway', 'drainOnSignals', 'true or false', onSignals)
  }
  if (
    typeof keepAliveTimeoutMs !== 'number' ||
    !Number.isSafeInteger(keepAliveTimeoutMs) ||
    keepAliveTimeoutMs < MIN_KEEP_ALIVE_TIMEOUT_MS ||
    keepAliveTimeoutMs > MAX_KEEP_ALIVE_TIMEOUT_MS
  ) {
    throw optionError(
      'startGateway',
      'keepAliveTimeoutMs',
      `a whole number of ms from ${MIN_KEEP_ALIVE_TIMEOUT_MS} to ${MAX_KEEP_ALIVE_TIMEOUT_MS}`,
      keepAliveTimeoutMs,
    )
  }
  // A SIGTERM while starting is handled as one just after: the caller gets a
  // running gateway and then the signal, so it drains and logs as usual (see
  // holdSignals). From before the host's lookup, part of starting: a slow
  // resolver's wait was a window in which a signal met no handler and
  // killed the process.
  const signals = holdSignals()
  let address: string
  let gateway: GatewayRouter
  try {
    address = await addressOf(listenHost)
    gateway = createStandaloneGateway(config, gatewayOptions)
  } catch (error) {
    // Delivered again, not swallowed: with no handler, it ends the process as it would have.
    signals.release()
    throw error
  }
  const clock = gatewayOptions.clock ?? systemClock
  // Node's own check of `Host` answered ahead of every listener, with a
  // bare 400 nobody could trace: the gateway makes it (refuseHostless).
  const server = createServer({ requireHostHeader: false })
  keepIdleConnections(server, keepAliveTimeoutMs)
  const served = trackIdleConnections(server)
  const log = (level: LogLevel, event: string, fields: Record<string, unknown>) =>
    gateway.log(level, event, fields)
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    served(res)
    // One pipelined behind the last answer on its connection gets no answer:
    // the router logs it unserved (behindLastAnswer), whatever its headers.
    if (lacksHost(req) && !behindLastAnswer(req.socket)) {
      refuseHostless(res, log)
      return
    }
    gateway(req as Request, res as Response, (error?: unknown) => {
      // Answered already (an error after the headers): its handler logged it.
      const answered = res.headersSent
      notRouted(error, res)
      if (!answered) logNotRouted(gateway, clock, res)
    })
  }
  server.on('request', serve)
  // `Expect: 100-continue`: without a listener here Node writes `100
  // Continue` on arrival, and a client refused anyway (its budget spent, a
  // drain under way) uploads its whole body to read the 504 or 503. With
  // one, the router's deadline() writes it once the request is taken
  // (@hourglass/express, "Arrived already expired"); one refused before
  // gets its answer with no upload, and Node closes that connection.
  // Without the router's deadline() it is written here, as Node would, but
  // after the Host check, which Node made first: a request refused for it
  // is asked for no body (nor one the router will not serve).
  server.on(
    'checkContinue',
    gatewayOptions.mountDeadline === false
      ? (req: IncomingMessage, res: ServerResponse) => {
          if (!lacksHost(req) && !behindLastAnswer(req.socket)) res.writeContinue()
          serve(req, res)
        }
      : serve,
  )
  // Any other `Expect` (none other is defined): served as if absent, which
  // RFC 9110 §10.1.1 allows (a 417 there is a MAY). Without a listener Node
  // answered 417 itself, ahead of the router: an empty body, no
  // `x-request-id`, no log line, not counted — a refusal nobody could trace.
  server.on('checkExpectation', serve)
  // What Node's parser cannot read gets an answer with an id and a log line
  // (Node's own: a bare 400 nobody could trace).
  server.on('clientError', refuseUnparsed(log))
  // A CONNECT (the gateway given as an HTTPS proxy): with no listener Node
  // destroyed its socket with nothing written or logged.
  server.on('connect', refuseConnect(log))
  try {
    // Serve with shared limits from the first request when Redis is reachable;
    // locally otherwise, or at once when a signal came: no point waiting to serve.
    await readyUnlessAborted(gateway, signals.signal)
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve)
      server.once('error', reject)
      // Inside the try: whatever listen() throws at once must close the gateway too.
      server.listen(port, address)
    })
  } catch (error) {
    signals.release()
    await closeUnstarted(gateway)
    throw error
  }
  let closing: Promise<DrainReport> | undefined
  const close = () => {
    closing ??= (async () => {
      // The drain begins now (answers in flight say `connection: close`, new
      // API requests get 503): see GatewayRouter.close.
      const drained = gateway.close()
      // Awaited below: a rejection meanwhile is not an unhandled one.
      drained.catch(() => {})
      // Not in the middle of this turn: a request already in a socket's
      // buffer, or a connection waiting to be accepted, is read first and
      // answered (the drain's 503), not reset with the listener or as idle:
      // every connection waiting, one accepted per turn of the loop.
      await afterWaitingConnections(server)
      // Stops listening and closes the connections between requests, as
      // Node's does (a kept-alive one would otherwise be held open for the
      // drain, its client's next request answered 503), through its
      // closeIdleConnections() — trackIdleConnections', which leaves an
      // answer its client has not taken yet to the drain.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      const report = await drained
      // A connection accepted in that poll has its request read in the next:
      // answered too before every connection is closed (a drain with
      // nothing in flight ends at once).
      await afterPendingReads()
      server.closeAllConnections()
      await closed
      return report
    })()
      // The signal listeners are let go once the drain has ended, not as it
      // begins: a stop signal during a drain close() began (a preStop hook's
      // endpoint, then the supervisor's SIGTERM) joins that drain and ends
      // the process once it is over, as a first signal does. Let go at the
      // start, the signal met no listener and Node's default killed the
      // process at once: the requests in flight cut, no shutdown line.
      .finally(() => releaseSignals())
    return closing
  }
  // Before the held signals are let go: one that came while starting finds this handler.
  const releaseSignals = onSignals
    ? drainOnSignals(close, (signal, first) =>
        // What the CLI writes for it: the drain's own line never comes.
        gateway.log('error', 'shutdown', {
          message: `${signal}${first === 'SIGHUP' ? ' after SIGHUP' : ' again'}: exiting without waiting for the drain`,
          forced: true,
          signal,
        }),
      )
    : () => {}
  const signalledWhileStarting = signals.held
  signals.release()
  const listening = server.address() as AddressInfo
  const shownHost = listening.family === 'IPv6' ? `[${listening.address}]` : listening.address
  return { url: `http://${shownHost}:${listening.port}`, gateway, signalledWhileStarting, close }
}

/**
 * The host to listen on: `[::1]`, an IPv6 address written as in a URL (as
 * the `url` handed back writes it), is `::1`. Node took the brackets for
 * part of a host name and failed with its raw `getaddrinfo ENOTFOUND [::1]`
 * once Redis had been dialled; brackets around anything else are refused
 * here, before anything is opened.
 */
function unbracketed(host: string): string {
  if (!host.includes('[') && !host.includes(']')) return host
  const inner = host.slice(1, -1)
  if (host.startsWith('[') && host.endsWith(']') && isIPv6(inner)) return inner
  throw optionError(
    'startGateway',
    'host',
    'an address or a host name (an IPv6 address may be in brackets, as in a URL: [::1])',
    host,
  )
}

/**
 * The address to listen on: the host's first address, as listen() would
 * take it (dns.lookup, first answer), looked up once — listen() given the
 * name would ask the resolver again. Read before Redis is dialled: a name the
 * resolver does not know (`no-such-host.invalid`, or `256.1.1.1`, dotted
 * numbers it takes for a name) is a bad option; listen() failed with its raw
 * `getaddrinfo ENOTFOUND` only once the gateway had connected to Redis and
 * waited for it. What the resolver reads as an address is one: `0` is
 * 0.0.0.0, `127.1` 127.0.0.1 (inet_aton). Another failure (a resolver down:
 * `EAI_AGAIN`) is thrown as listen() would throw it, at once.
 */
async function addressOf(host: string): Promise<string> {
  if (isIP(host) !== 0) return host
  try {
    return (await lookup(host)).address
  } catch (cause) {
    // Dotted numbers the resolver does not read as an address name nothing,
    // whatever the DNS said (a host name is not all digits, RFC 1123 §2.1).
    if ((cause as NodeJS.ErrnoException).code !== 'ENOTFOUND' && !DOTTED_NUMBERS.test(host)) {
      throw cause
    }
    throw Object.assign(unresolvable(host), { cause })
  }
}

const DOTTED_NUMBERS = /^[0-9.]+$/

function unresolvable(host: string): Error {
  return optionError('startGateway', 'host', 'an address or a host name that resolves', host)
}

/** `keepAliveTimeoutMs` when none is given: above AWS ALB's 60 s idle timeout, as AWS advises. */
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 65_000

/**
 * A second: Node says the idle time in whole seconds (`Keep-Alive:
 * timeout=N`, rounded down), and under a second it said `timeout=0` — to a
 * client, "do not reuse this connection" — where the server kept it open.
 */
export const MIN_KEEP_ALIVE_TIMEOUT_MS = 1000

/** A day: past 2³¹ − 1 ms, Node's timers fire at once. */
export const MAX_KEEP_ALIVE_TIMEOUT_MS = 86_400_000

/**
 * Keeps idle connections open `keepAliveTimeoutMs`. Node's wait for a
 * request's headers (60 s) and for the whole request (300 s) stay as they
 * are: on Node 18 and later the headers' wait starts with the request's
 * first byte, not at the previous answer, so it need not outlast the idle
 * time (as advice written for older Node asks), and raising it with a long
 * keep-alive (GCP's 600 s) gave a client dribbling its headers ten minutes.
 */
function keepIdleConnections(server: Server, keepAliveTimeoutMs: number): void {
  server.keepAliveTimeout = keepAliveTimeoutMs
}

const API_PATH = /^\/v1\//i

/**
 * The `request` line every other API answer has (a 405, a 400, a drain's
 * 503): without it, a 404 counted in `/metrics` and answered with its
 * `x-request-id` left nothing in the logs for that id. API paths only, as
 * they are the ones counted (a probe of `/favicon.ico` is not).
 */
function logNotRouted(gateway: GatewayRouter, clock: Clock, res: ServerResponse): void {
  const scope = scopeOf(res)
  const path = pathOf(res.req)
  if (scope === undefined || !API_PATH.test(path)) return
  gateway.log(res.statusCode >= 500 ? 'warn' : 'info', 'request', {
    requestId: scope.id,
    path,
    status: res.statusCode,
    error: scope.errorCode,
    latencyMs: Math.round(clock.now() - scope.startedAt),
  })
}

/**
 * What the router left: an unknown path (404 in OpenAI's error shape), or an
 * error after the answer had started, when all that is left is to end the
 * connection (what Express's final handler does).
 */
function notRouted(error: unknown, res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  const notFound = error === undefined || error === 'route' || error === 'router'
  // Its body (a POST to no route) is read by nobody: the last answer on the connection.
  if (bodyStillOwed(res.req)) closeAfterAnswer(res)
  // Counted as the code the client gets (`not_found`), not as `http_404`.
  const scope = scopeOf(res)
  if (scope !== undefined) scope.errorCode ??= notFound ? 'not_found' : 'internal_error'
  if (notFound) {
    sendJson(res, 404, {
      error: {
        message: noRouteMessage(res.req.method, pathOf(res.req)),
        type: 'invalid_request_error',
        param: null,
        code: 'not_found',
      },
    })
    return
  }
  // The router's own error handler failed: a bug, answered as every other
  // one is (its own 500 here lacked `x-should-retry: false`, and the
  // official clients retried it).
  const bug = internalErrorReply()
  for (const [name, value] of Object.entries(bug.headers)) res.setHeader(name, value)
  res.setHeader('cache-control', 'no-store')
  sendJson(res, bug.status, bug.body)
}
