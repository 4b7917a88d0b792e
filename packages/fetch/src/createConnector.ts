import {
  getDefaultAutoSelectFamily,
  getDefaultAutoSelectFamilyAttemptTimeout,
  isIP,
  type NetConnectOpts,
  type LookupFunction as NetLookupFunction,
  connect as netConnect,
  type Socket,
  type TcpNetConnectOpts,
} from 'node:net'
import { type ConnectionOptions, type TLSSocket, connect as tlsConnect } from 'node:tls'
import {
  MAX_TIMER_MS,
  optionError,
  refuseUnknownOptions,
  runOutsideContext,
  systemClock,
} from '@hourglass/core'
import type { buildConnector } from 'undici'
import { Attempt } from './Attempt.js'
import { asError } from './asError.js'
import { claimConnectAttempt, othersWaitFor } from './attemptContext.js'
import { ConnectError } from './errors/ConnectError.js'
import { isConnectTimeout, nameConnectTimeoutHost } from './errors/ConnectTimeoutError.js'
import type { ConnectTarget } from './errors/connectTarget.js'
import { DnsError } from './errors/DnsError.js'
import { isDnsTimeout, nameDnsTimeoutHost } from './errors/DnsTimeoutError.js'
import { lookupAbandonable } from './lookupAbandonable.js'
import {
  CONNECTOR_OPTION_NAMES,
  type EgressOptions,
  type LookupFunction,
  type ResolvedOptions,
  resolveOptions,
} from './options.js'
import { markTakenByConnector } from './takenByConnector.js'

export interface ConnectorOptions extends EgressOptions {
  /** Extra TLS options for https origins (`ca`, `rejectUnauthorized`, client certs…). */
  tls?: ConnectionOptions
}

/**
 * An undici connector (`new Agent({ connect: createConnector() })`) that runs
 * the DNS and connect phases as two bounded steps: a lookup limited by
 * `min(dnsTimeoutMs, time left)` and abandoned when it runs out, then TCP (and
 * TLS) limited by `min(connectTimeoutMs, time left)`. The limits are this
 * connector's; the time left is the deadline of the attempt that asked for
 * the connection, and without one the limits apply alone.
 */
export function createConnector(options: ConnectorOptions = {}): buildConnector.connector {
  refuseUnknownOptions(options, CONNECTOR_OPTION_NAMES, 'createConnector()')
  const connector = connectorFor(resolveOptions(options, 'createConnector()'), options.tls)
  markTakenByConnector(options)
  return connector
}

/** ALPN as undici's own connector offers it, with and without the Agent's `allowH2`. */
const H1_ONLY = ['http/1.1']
const H2_OR_H1 = ['http/1.1', 'h2']

/** The connector over options already resolved (createFetch resolves them once for agent, connector and interceptor). */
export function connectorFor(
  config: ResolvedOptions,
  tls: ConnectionOptions | undefined,
): buildConnector.connector {
  // Spread into node:tls's options: a number, a string or null spreads into
  // nothing, and the caller's CA, certificate or servername went unused
  // without a word.
  if (tls !== undefined && (typeof tls !== 'object' || tls === null)) {
    throw optionError('tls', "an object of node:tls's connect options", tls)
  }
  const own = config.lookup
  return (opts, callback) => {
    let claimed = claimConnectAttempt()
    /** The connect's own bookkeeping: its limits alone, no deadline, no events. */
    const ownAttempt = (clock: Attempt['init']['clock']) =>
      new Attempt({
        deadline: undefined,
        signal: undefined,
        limits: config,
        clock,
        method: 'CONNECT',
        url: `${opts.protocol}//${opts.host}`,
        number: 0,
        silent: true,
      })
    let attempt = claimed ?? ownAttempt(config.clock ?? systemClock)
    /** Where the connect is: the phase a connect carried on for others re-enters. */
    let phase: 'dns' | 'connect' | undefined
    // This connector's own limits, for a claimed attempt too: the request's
    // deadline bounds them, its options do not replace them. The request's
    // were used, so `createConnector({ connectTimeoutMs: 300 })` under
    // `deadlineInterceptor()` waited that one's default 3000 ms, and a
    // dispatcher given to createFetch had createFetch's limits in place of
    // its own connector's.
    const enter = (next: 'dns' | 'connect') => {
      phase = next
      attempt.enter(next, next === 'dns' ? config.dnsTimeoutMs : config.connectTimeoutMs)
    }
    let socket: Socket | undefined
    let settled = false
    // The default lookup's: stop waiting for a name (see lookupAbandonable).
    let abandonLookup: (() => void) | undefined
    // The wait before the next address is tried (`inTurn`): no timer outlives the connect.
    let stopTurn: (() => void) | undefined
    const settle = (error: Error | null, ready?: Socket) => {
      if (settled) return
      settled = true
      unregister()
      abandonLookup?.()
      stopTurn?.()
      if (error) {
        socket?.destroy()
        if (!claimed) attempt.finish(error)
        callback(error, null)
        return
      }
      if (claimed) attempt.connected()
      else attempt.finish()
      callback(null, ready!)
    }
    // The phase limit, the deadline or the caller fired: stop waiting, drop the socket.
    const stop = (reason: unknown) => {
      if (
        claimed &&
        !isPhaseTimeout(reason) &&
        othersWaitFor(opts.protocol, originHost(opts), claimed)
      ) {
        carryOn()
        return
      }
      settle(asError(reason))
    }
    let unregister = attempt.onAbort(stop)
    // The request that started this connect was stopped by its own deadline
    // or its caller, and others wait for a connection to this origin (an
    // undici Client queues them behind this connect). Failed, the connect
    // failed them too — undici errors every request queued on it — with
    // that one request's reason: a request with seconds left got another's
    // DEADLINE_EXCEEDED. It goes on as a connect made for a queued request
    // does: bounded by this connector's own limits alone, the phase it is in
    // counted afresh. undici's own connector, too, connects on.
    const carryOn = () => {
      const clock = attempt.init.clock
      claimed = undefined
      attempt = ownAttempt(clock)
      unregister = attempt.onAbort(stop)
      attempt.onFinish(nameHost)
      if (phase !== undefined) enter(phase)
    }
    // undici tells no connector that its client was destroyed: it fails the
    // queued request, and the attempt that asked for this connection ends
    // without being stopped, so onAbort never hears of it — and its limits
    // end with it. A name answering afterwards opened a socket nobody would
    // use, with no timer on it: an https one whose server never finished the
    // handshake stayed open, holding the process up. Stopped, with the error
    // that ended the attempt (the destroy's), before anything is opened.
    if (claimed) {
      claimed.onFinish((ended) => {
        if (ended.reason !== undefined) return // stopped: onAbort settles it (or carries on)
        settle(asError(ended.error ?? new Error('the request this connection was for has ended')))
      })
    }

    const https = opts.protocol === 'https:'
    // The Agent's `allowH2`, which undici hands a connector function with
    // `socketPath` (undici's types do not list it): HTTP/2 is offered as
    // undici's own connector offers it. Ignored, an Agent made with
    // `allowH2: true` spoke HTTP/1.1 to every origin without a word.
    const offersH2 = (opts as { allowH2?: unknown }).allowH2 === true
    // A socket given by the caller (undici's `httpSocket`: the tunnel a
    // ProxyAgent opened with CONNECT) carries the TLS connection, as undici's
    // own connector has it. Ignored, the connection went straight to the
    // origin, around the proxy: no lookup and no socket of ours here.
    const tunnel = opts.httpSocket
    if (tunnel && !https) {
      // undici asserts it: a plain http origin has nothing to upgrade.
      settle(
        new TypeError('createConnector: httpSocket can only be given for https (a TLS upgrade)'),
      )
      return
    }

    // The Agent's `socketPath` (a Unix socket, a Windows pipe), which undici
    // hands a connector of one's own and its own connector connects to: the
    // URL names the host for the request and the TLS name only. Ignored, the
    // name was looked up and the connection went over TCP to its port —
    // refused, or answered by whatever listens there. No lookup for it.
    const socketPath = typeof opts.socketPath === 'string' ? opts.socketPath : undefined

    // Where this connect goes, as its errors name it: a connect timeout
    // said only "connect timed out", and a reset handshake "connect failed:
    // ECONNRESET", where undici's own error names the address it tried.
    const target: ConnectTarget = {
      hostname: opts.hostname,
      port: Number(opts.port) || (https ? 443 : 80),
      socketPath: tunnel === undefined ? socketPath : undefined,
    }
    // The attempt's DNS and connect timers raise their timeout errors
    // knowing no host: named here as the attempt ends, before anyone is
    // told of it. Only the one its own timer raised: a caller's (or a
    // deadline's) abort reason of the same class is theirs, about another
    // call or connect — named, it was rewritten to name this target.
    const nameHost = (ended: Attempt) => {
      const error = ended.error
      if (error === undefined || error !== ended.ownTimeout) return
      if (isDnsTimeout(error)) nameDnsTimeoutHost(error, opts.hostname)
      else if (isConnectTimeout(error)) nameConnectTimeoutHost(error, target)
    }
    attempt.onFinish(nameHost)

    const open = (given: readonly ResolvedAddress[]) => {
      if (settled) return
      enter('connect')
      const started = attempt.init.clock.now()
      const port = Number(opts.port) || (https ? 443 : 80)
      // A `localAddress` binds one family: an address of the other failed
      // with "bind EINVAL" (and Happy Eyeballs gave up there), so a name
      // with both, under an IPv4 localAddress, never connected. Only its
      // family is tried, when the name has one.
      const from = opts.localAddress ? isIP(opts.localAddress) : 0
      const same = from ? given.filter((a) => a.family === from) : given
      const found = same.length > 0 ? same : given
      // `autoSelectFamily: false` connects to the first address alone, as
      // net.connect does with it off.
      const addresses =
        found.length > 1 && !(config.autoSelectFamily ?? getDefaultAutoSelectFamily())
          ? found.slice(0, 1)
          : found
      // undici's order (buildConnector): the request's servername, then the
      // connector's (`tls.servername`), then the name in the URL. Spreading
      // `tls` first and the URL's name after it silently dropped the caller's
      // SNI for every named host.
      const servername =
        opts.servername || tls?.servername || (isIP(opts.hostname) ? undefined : opts.hostname)
      // The Agent's `localAddress` (undici hands it to the connector, and its
      // own connector binds to it): the connection left from the default
      // address instead — past an egress allow-list keyed on the source.
      const localAddress =
        tunnel === undefined && socketPath === undefined
          ? opts.localAddress || undefined
          : undefined
      // One address: connect to it. Several (IPv6 and IPv4 for one name):
      // Node's own Happy Eyeballs tries them in turn, as it does for a plain
      // connect, from the answer our bounded lookup already has — a name
      // whose first address refuses (::1 before 127.0.0.1) still connects.
      // Not with a `localAddress`: Node then turns Happy Eyeballs off and
      // asks the lookup for one address, so only the first was ever tried
      // (and every retry tried it again). The addresses are tried in turn
      // here instead, as Node would (`inTurn`).
      // Each address but the last is given `attemptMs` (undici's Agent hands
      // a connector function neither of its own `autoSelectFamily*` options).
      const attemptMs =
        addresses.length > 1
          ? perAddressMs(
              config.autoSelectFamilyAttemptTimeoutMs,
              attempt.budgetMs(config.connectTimeoutMs),
            )
          : 0
      if (tunnel === undefined && localAddress !== undefined && addresses.length > 1) {
        inTurn(addresses, 0, { port, localAddress, servername, started, attemptMs })
        return
      }
      const target: NetConnectOpts =
        socketPath !== undefined && tunnel === undefined
          ? { path: socketPath }
          : tunnel !== undefined
            ? { host: opts.hostname, port }
            : addresses.length === 1
              ? { host: (addresses[0] as ResolvedAddress).address, port }
              : {
                  host: opts.hostname,
                  port,
                  autoSelectFamily: true,
                  autoSelectFamilyAttemptTimeout: attemptMs,
                  lookup: answerWith(addresses),
                }
      // Never with a socketPath (localAddress is undefined then): a TCP target.
      if (localAddress !== undefined) (target as TcpNetConnectOpts).localAddress = localAddress
      const made = connectSocket(target, servername)
      if (made === undefined) return
      made.once(https ? 'secureConnect' : 'connect', function (this: Socket) {
        settle(null, this)
      })
      made.on('error', function (this: Socket, error) {
        if (settled) return
        fail(this, error, started)
      })
    }

    /**
     * Open the socket (TLS over it for https, over the tunnel when there is
     * one), or settle with Node's error when it refuses the options.
     */
    const connectSocket = (
      target: NetConnectOpts,
      servername: string | undefined,
    ): Socket | undefined => {
      try {
        // Outside the request's context: the socket is kept alive for later
        // requests, and an async resource keeps the context it was made in for
        // its whole life — the first request, its body and its deadline, held
        // for as long as the connection lasts (up to the pool size × the
        // largest body, in a gateway).
        socket = runOutsideContext(() =>
          https
            ? tlsConnect({
                ...tls,
                ...target,
                ...(tunnel !== undefined ? { socket: tunnel } : {}),
                ...(servername ? { servername } : {}),
                ALPNProtocols: offersH2 ? H2_OR_H1 : H1_ONLY,
              })
            : netConnect(target),
        )
      } catch (error) {
        // Node refuses the options at once (a `tls.ca` that is not a string
        // or Buffer, say). After a lookup this runs in dns's callback, where
        // the throw was uncaught — the process crashed — and the request
        // never answered: it fails with Node's error instead, as undici's
        // own connector fails it for an IP address.
        settle(error instanceof Error ? error : new Error(String(error)))
        return undefined
      }
      socket.setNoDelay(true)
      socket.setKeepAlive(true, 60_000)
      return socket
    }

    /** The connect failed: a `ConnectError` for the phase. */
    const fail = (failed: Socket, error: Error, started: number) => {
      const elapsedMs = attempt.init.clock.now() - started
      // Node sets authorizationError just before it destroys a socket whose
      // peer certificate failed verification (chain or hostname); it is null before.
      const certificateRejected = https && Boolean((failed as TLSSocket).authorizationError)
      settle(
        new ConnectError({
          elapsedMs: attempt.elapsed(),
          phaseMs: elapsedMs,
          cause: error,
          certificateRejected,
          ...target,
        }),
      )
    }

    /**
     * Connect to `addresses[at]` from `localAddress`; when its TCP connect
     * fails, or has not answered within the per-address wait (`attemptMs`:
     * `perAddressMs`), move on to the next — all within the one connect
     * limit, as Node's Happy Eyeballs does. The last address has the rest of
     * the limit; its failure is the call's. A TLS failure (a rejected
     * certificate) is no address's fault: it is not tried elsewhere.
     */
    const inTurn = (addresses: readonly ResolvedAddress[], at: number, turn: Turn) => {
      if (settled) return
      const { port, localAddress, servername, started } = turn
      const address = addresses[at] as ResolvedAddress
      const last = at === addresses.length - 1
      const made = connectSocket({ host: address.address, port, localAddress }, servername)
      if (made === undefined) return
      const clock = attempt.init.clock
      let timer: unknown
      let reached = false
      stopTurn = () => {
        if (timer !== undefined) clock.clearTimeout(timer)
        timer = undefined
      }
      const next = () => {
        stopTurn?.()
        made.destroy()
        inTurn(addresses, at + 1, turn)
      }
      if (!last) {
        timer = clock.setTimeout(() => {
          timer = undefined
          if (!settled && !reached && socket === made) next()
        }, turn.attemptMs)
      }
      made.once('connect', () => {
        reached = true
        stopTurn?.()
      })
      made.once(https ? 'secureConnect' : 'connect', function (this: Socket) {
        settle(null, this)
      })
      made.on('error', function (this: Socket, error) {
        if (settled || socket !== made) return
        if (!last && !reached) next()
        else fail(this, error, started)
      })
    }

    if (tunnel || socketPath !== undefined) {
      open([])
      return
    }
    if (isIP(opts.hostname)) {
      open([{ address: opts.hostname, family: isIP(opts.hostname) }])
      return
    }
    enter('dns')
    // A lookup of one's own may call back twice or throw: a second answer
    // must not open a second socket (nobody would ever close it), and a
    // throw is the name failing to resolve.
    let answered = false
    const onAnswer: Parameters<LookupFunction>[2] = (error, answer) => {
      if (settled || answered) return
      answered = true
      const addresses = error ? [] : addressesIn(answer)
      if (error || addresses.length === 0) {
        settle(
          new DnsError({
            hostname: opts.hostname,
            elapsedMs: attempt.elapsed(),
            cause: error ?? noAddressError(opts.hostname, answer),
          }),
        )
        return
      }
      open(addresses)
    }
    try {
      if (own) answerFromPromise(own(opts.hostname, { all: true }, onAnswer), onAnswer)
      else abandonLookup = lookupAbandonable(opts.hostname, { all: true }, onAnswer)
    } catch (error) {
      onAnswer(error as NodeJS.ErrnoException, [])
    }
  }
}

/**
 * A `lookup` that returned a promise: `dns.promises.lookup` given by mistake
 * (it never calls back, so every call waited out `dnsTimeoutMs`, and for
 * good with 0), or an async wrapper (which calls back, and resolves nothing).
 * What it resolves to, when something, is the answer; a rejection the
 * failure. Whichever comes first of this and the callback is taken
 * (`onAnswer` takes one).
 */
function answerFromPromise(returned: unknown, onAnswer: Parameters<LookupFunction>[2]): void {
  if (typeof (returned as { then?: unknown } | null | undefined)?.then !== 'function') return
  ;(returned as PromiseLike<unknown>).then(
    (value) => {
      if (value !== undefined) onAnswer(null, value as never)
    },
    (error: unknown) => onAnswer(error as NodeJS.ErrnoException, []),
  )
}

/**
 * The connect's own limit fired (DNS or connect timeout): a failure of the
 * connect itself, which fails what is queued on it, as undici's own connect
 * timeout does. Told by code, not `instanceof`: the reason may be the
 * caller's own, and `instanceof` throws on a revoked Proxy.
 */
function isPhaseTimeout(reason: unknown): boolean {
  return isDnsTimeout(reason) || isConnectTimeout(reason)
}

/** The origin's `host` (name and port, a default port left out), as undici hands it. */
function originHost(opts: buildConnector.Options): string {
  if (typeof opts.host === 'string') return opts.host
  const name = isIP(opts.hostname) === 6 ? `[${opts.hostname}]` : opts.hostname
  return opts.port ? `${name}:${opts.port}` : name
}

interface ResolvedAddress {
  address: string
  family: number
}

/** What every address tried in turn shares (`inTurn`). */
interface Turn {
  port: number
  localAddress: string
  servername: string | undefined
  started: number
  /** How long each address but the last is given (`perAddressMs`). */
  attemptMs: number
}

/** Node's floor for `autoSelectFamilyAttemptTimeout`: it reads a shorter one as 10 ms. */
const MIN_ATTEMPT_MS = 10

/**
 * How long one address of several is given before the next is tried: the
 * option (`0`: no limit of its own), else Node's default (250 ms), at most
 * half the connect's budget, and at least Node's floor; a whole number of
 * ms, as net.connect takes it. Node aborts an attempt at its timeout and
 * moves on (it does not race them), so with its 250 ms and a 200 ms
 * connect limit, a first address that never answered took the whole
 * budget and the second was never tried; with half, the next address has
 * at least the other half.
 */
function perAddressMs(given: number | undefined, budgetMs: number): number {
  const own = given ?? getDefaultAutoSelectFamilyAttemptTimeout()
  const ms = Math.min(own > 0 ? own : MAX_TIMER_MS, budgetMs / 2, MAX_TIMER_MS)
  return Math.max(MIN_ATTEMPT_MS, Math.floor(ms))
}

/**
 * The IP addresses in a lookup's answer (an array of `{ address, family }`,
 * or one address), each with the family read off the address itself: a
 * lookup of one's own may answer one address whatever it was asked, and name
 * a family as Node 18.0–18.3 did ('IPv4'). An entry that is no IP address —
 * an empty string, a host name, no `{ address }` at all — is passed over, as
 * net.connect passes over such entries: handed to it as a `host`, '' (or
 * none) connected to localhost, and a name was looked up again by Node, past
 * the DNS limit, its ENOTFOUND failing as a connect. Nothing here throws:
 * this runs in the lookup's callback, where a throw was uncaught.
 */
function addressesIn(answer: unknown): ResolvedAddress[] {
  const entries: unknown[] = Array.isArray(answer) ? answer : [{ address: answer }]
  const found: ResolvedAddress[] = []
  for (const entry of entries) {
    const address = (entry as { address?: unknown } | null | undefined)?.address
    if (typeof address !== 'string') continue
    const ipFamily = isIP(address)
    if (ipFamily !== 0) found.push({ address, family: ipFamily })
  }
  return found
}

/** Why a lookup that answered without an error gave no address: none at all, or none that is an IP address (Node's code for it). */
function noAddressError(hostname: string, answer: unknown): Error {
  const empty =
    answer === undefined ||
    answer === null ||
    answer === '' ||
    (Array.isArray(answer) && answer.length === 0)
  if (empty) return new Error(`no address for ${hostname}`)
  return Object.assign(new Error(`the lookup answered no IP address for ${hostname}`), {
    code: 'ERR_INVALID_IP_ADDRESS',
  })
}

/** A `lookup` for net.connect that answers at once with addresses already resolved. */
function answerWith(addresses: readonly ResolvedAddress[]): NetLookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, addresses as ResolvedAddress[])
    else
      callback(
        null,
        (addresses[0] as ResolvedAddress).address,
        (addresses[0] as ResolvedAddress).family,
      )
  }
}
