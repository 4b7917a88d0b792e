import { lookup } from 'node:dns/promises'
import { isIP, isIPv6 } from 'node:net'
import { hostname } from 'node:os'
import { type Command, type Io, isProcessIo } from '../Command.js'
import { intOption, parseCommandArgs } from '../parseCommandArgs.js'
import { printable } from '../printable.js'
import { releaseFifoReaders } from '../releaseFifoReaders.js'
import { servesUntilStopped } from '../servesUntilStopped.js'
import {
  caughtSignalsDelivered,
  heldStartupSignal,
  releaseStartupSignals,
  startupStopSignal,
} from '../startupSignals.js'
import { UsageError } from '../UsageError.js'
import { STOPPED, unlessStopped } from '../unlessStopped.js'
import { unprivilegedPortStart } from '../unprivilegedPortStart.js'
import { untilSignalled } from '../untilSignalled.js'

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const

/** The exit code of a stop whose drain timed out and cancelled requests in flight. */
export const EXIT_CUT_OFF = 3

export const gatewayCommand: Command = {
  name: 'gateway',
  summary: 'an OpenAI-compatible gateway over your providers (@hourglass/gateway)',
  help: `Usage: hourglass gateway --config <file.json> [--port 8080] [--host 127.0.0.1]

Serves @hourglass/gateway: POST /v1/chat/completions, GET /v1/models,
GET /healthz, GET /readyz, GET /metrics. Point any OpenAI client at
http://<host>:<port>/v1. Logs are JSON lines (pino) on stderr. SIGTERM,
SIGINT or SIGHUP drains: requests in flight get --drain-timeout-ms to finish
(exit 0), else are cancelled (exit 3); after SIGHUP the process ends by the
signal once drained (129 in a shell). A second signal (not a second SIGHUP)
exits at once.

Options:
  --config <file>          the gateway config (JSON): providers, keys, limits,
                           models (env HOURGLASS_GATEWAY_CONFIG)
  --port <n>               port (env PORT; default 8080; 0 = any free port)
  --host <addr>            address to bind (env HOST; default 127.0.0.1; in a
                           container, set it to 0.0.0.0)
  --drain-timeout-ms <ms>  on shutdown, the wait for requests in flight before
                           they are cancelled (default 10000; 0 = at once)
  --keep-alive-timeout-ms <ms>
                           how long an idle connection is kept open (default
                           65000: longer than a load balancer's idle timeout,
                           AWS ALB's 60 s, which must close it first)
  --log-level <level>      debug, info, warn or error, any case (env LOG_LEVEL;
                           default info: one line per request, one per failed
                           attempt)
  -h, --help               this help

A flag wins over its environment variable.
`,
  async run(args, io) {
    const { values } = parseCommandArgs('gateway', args, {
      allowPositionals: false,
      options: {
        config: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        'drain-timeout-ms': { type: 'string' },
        'keep-alive-timeout-ms': { type: 'string' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    })
    if (values.help) {
      io.stdout(gatewayCommand.help)
      return 0
    }
    // Its `listening` line is a notice: a stdout that cannot take it does
    // not make a clean drain exit 1 (its help, above, is the output).
    servesUntilStopped()
    // `--config "$CONFIG"` with CONFIG unset: named as the empty flag it is,
    // not as a file called '' that cannot be read.
    if (values.config !== undefined && values.config.trim() === '') {
      throw new UsageError(
        'hourglass gateway: --config is empty: give the path of the gateway config (see hourglass gateway --help)',
      )
    }
    const env = process.env
    const configPath = values.config ?? nonEmpty(env['HOURGLASS_GATEWAY_CONFIG'])
    if (configPath === undefined) {
      throw new UsageError(
        'hourglass gateway: --config <file.json> (or HOURGLASS_GATEWAY_CONFIG) is required (see hourglass gateway --help)',
      )
    }
    // Where the port came from: a port in use is refused naming that source,
    // not a --port the operator in a container (PORT set) never gave.
    const portFromEnv = values.port === undefined && nonEmpty(env['PORT']) !== undefined
    const port = portFromEnv
      ? envPort(env['PORT'] as string)
      : intOption('gateway', 'port', values.port, 8080, 0, 65_535)
    // Trimmed, as HOST is: a command substitution often ends in a blank, and
    // was refused as no address where the same value in HOST was served.
    const givenHost = values.host?.trim() ?? nonEmpty(env['HOST']) ?? '127.0.0.1'
    const hostFrom =
      values.host !== undefined
        ? '--host'
        : nonEmpty(env['HOST']) !== undefined
          ? 'HOST'
          : 'the default host'
    const host = checkHost(givenHost, hostFrom)
    const drainTimeoutMs = intOption(
      'gateway',
      'drain-timeout-ms',
      values['drain-timeout-ms'],
      10_000,
      0,
    )
    // Checked here, with the other flags, as a usage error; startGateway's
    // own default (65 000) when not given.
    const keepAliveTimeoutMs =
      values['keep-alive-timeout-ms'] === undefined
        ? undefined
        : intOption(
            'gateway',
            'keep-alive-timeout-ms',
            values['keep-alive-timeout-ms'],
            0,
            // startGateway's bounds: the header counts whole seconds.
            1000,
            86_400_000,
          )
    const givenLevel = values['log-level'] ?? nonEmpty(env['LOG_LEVEL']) ?? 'info'
    // pino's levels are lower case; operators write LOG_LEVEL=INFO or WARN.
    const logLevel = givenLevel.trim().toLowerCase()
    if (!LOG_LEVELS.includes(logLevel as (typeof LOG_LEVELS)[number])) {
      throw new UsageError(
        `hourglass gateway: ${values['log-level'] !== undefined ? '--log-level' : 'LOG_LEVEL'} must be one of ${LOG_LEVELS.join(', ')} (any case), got '${printable(givenLevel)}'`,
      )
    }
    // A name that does not resolve is the caller's setting: said before the
    // config is read and the gateway built.
    // A stop signal held while this command's own start-up I/O waits (a
    // resolver that hangs, a config that is a FIFO nobody writes, a slow
    // mount) stops it there: the wait may never end, and the signal was only
    // recorded. Nothing is started yet, so nothing to drain: exit 0.
    const startupStop = startupStopSignal()
    const stopped = () => {
      stoppedWhileStarting(
        io,
        heldStartupSignal() ?? (startupStop.reason as NodeJS.Signals),
        logLevel,
      )
      return 0
    }
    // Looked up once, here (where a stop signal ends the wait), and
    // startGateway given the answer: given the name it would look it up again
    // (two answers, which may differ: the second failure was said as a name
    // that does not resolve), and before it holds the stop signals. Not begun
    // for a signal already caught, still on its way to JavaScript (the
    // command has just loaded, maybe without the loop polling once): held
    // first, it stops the command before the lookup, which may never end.
    await caughtSignalsDelivered()
    const address =
      isIP(host) !== 0 ? host : await unlessStopped(startupStop, () => addressOf(host, hostFrom))
    if (address === STOPPED) return stopped()
    // Imported when used: the gateway package (and what it pulls in) costs the
    // other commands nothing.
    const { isGatewayConfigError, loadGatewayConfig, startGateway } = await import(
      '@hourglass/gateway'
    )
    // The same before the config read, a wait that may never end (a FIFO
    // nobody writes): a signal caught as the gateway loaded stops the command
    // before it, rather than just after it has begun and holds a thread.
    await caughtSignalsDelivered()
    let running: Awaited<ReturnType<typeof startGateway>>
    let signalledEarly: NodeJS.Signals | undefined
    try {
      const config = await unlessStopped(
        startupStop,
        () => loadGatewayConfig(configPath),
        // Node's exit would wait for the read left behind: let a FIFO's go.
        () => releaseFifoReaders(configPath),
      )
      if (config === STOPPED) return stopped()
      // A default budget the reserves leave nothing of is createGateway's
      // GatewayConfigError at `deadline.defaultMs` (or `reserveMs`), said
      // below as any bad field; this command's own check said "more than
      // 25 ms" where 35 were needed.
      // startGateway holds the stop signals from its first line (synchronously,
      // before this call returns): a signal held since the binary started
      // reaches it, and is handled as one during start-up. One the process
      // caught but has not yet delivered (nothing polled since) is held
      // first: released, its listener gone, it would be dropped.
      await caughtSignalsDelivered()
      signalledEarly = heldStartupSignal()
      releaseStartupSignals()
      running = await startGateway({
        config,
        port,
        host: address,
        drainTimeoutMs,
        keepAliveTimeoutMs,
        logLevel: logLevel as (typeof LOG_LEVELS)[number],
        // The process's own stderr: pino's synchronous write to fd 2 (a forced
        // stop's line is out before the process ends). A caller's io
        // (`main(argv, io)`) gets the log lines as it gets every other line:
        // they went to fd 2 past it, and a caller capturing the command's
        // output had none of its logs.
        logger: isProcessIo(io)
          ? undefined
          : (record: object) => io.stderr(`${JSON.stringify(record)}\n`),
        // Its own handlers (below): exit 0 after a clean drain (3 if it cut
        // requests off), a line for a second signal.
        drainOnSignals: false,
      })
    } catch (error) {
      if (isGatewayConfigError(error)) {
        // One line per bad field: a typo names the field, not a stack trace.
        for (const problem of error.problems) {
          io.stderr(
            `hourglass gateway: ${printable(configPath, 80)}: ${printable(problem.field, 120)}: ${printable(problem.message, Number.POSITIVE_INFINITY)}\n`,
          )
        }
        return 2
      }
      const code = (error as NodeJS.ErrnoException).code
      // An IPv6 address in brackets, as a URL writes it: `::1:8080` reads as neither.
      const where = isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`
      // Named as the operator set it: a container sets PORT, and has no --port to change.
      const otherPort = `${portFromEnv ? 'set PORT to another port' : 'pick another --port'}, or 0 for any free port`
      if (code === 'EADDRINUSE') {
        io.stderr(
          `hourglass gateway: ${where} is already in use: another process listens there (${otherPort})\n`,
        )
        return 1
      }
      const portStart = code === 'EACCES' ? unprivilegedPortStart() : 0
      if (code === 'EACCES' && port > 0 && port < portStart) {
        // A container that runs as a user, given PORT=80: Node's `listen EACCES` said neither why nor what to do.
        // The bound as this machine sets it: not always 1024.
        io.stderr(
          `hourglass gateway: cannot listen on ${where}: permission denied (a port below ${portStart} needs privileges: ${otherPort})\n`,
        )
        return 1
      }
      if (code === 'EADDRNOTAVAIL') {
        // An address this machine does not have: the caller's setting, said
        // in one line instead of listen's. (A name was looked up above.)
        io.stderr(
          `hourglass gateway: cannot listen on ${host}: not an address of this machine${LISTEN_HINT}\n`,
        )
        return 2
      }
      if (code === 'EINVAL' && isIP(address) === 6) {
        // An IPv6 address listen() cannot bind as written — given, or what a
        // name resolved to (Docker's /etc/hosts maps ip6-allnodes to ff02::1)
        // —: its `listen EINVAL: invalid argument` was exit 1, a failure of
        // the machine, for what is the caller's setting.
        io.stderr(
          `hourglass gateway: cannot listen on ${host}: ${unbindableIpv6(address)}${LISTEN_HINT}\n`,
        )
        return 2
      }
      throw error
    }
    // Listen for the signals before saying "listening": whoever reads that line may signal at once.
    const stop = untilSignalled((signal, first) =>
      // Through the gateway's logger: its JSON lines on stderr, not a plain line among them.
      running.gateway.log('error', 'shutdown', {
        // "again" after another stop signal (a second stop, whichever it is;
        // test/cli pins it); a hang-up first was no operator's stop.
        message: `hourglass gateway: ${signal}${first === 'SIGHUP' ? ' after SIGHUP' : ' again'}: exiting without waiting for the drain`,
        forced: true,
        signal,
      }),
    )
    // Told to stop while it started (the signal was held, by startGateway or
    // since the binary's first line, and comes next): it never was ready, so
    // it does not say it is listening.
    if (running.signalledWhileStarting === undefined && signalledEarly === undefined) {
      try {
        io.stdout(`hourglass gateway listening on ${running.url}/v1\n`)
      } catch (error) {
        // A caller's io that cannot take the line (`main(argv, io)` writing
        // to a stream already closed): the command fails (exit 1), and takes
        // the gateway down with it. It was left listening, with nobody to
        // close it, and with its signal listeners on the caller's process:
        // a SIGTERM no longer ended that process.
        stop.release()
        await running.close()
        throw error
      }
    }
    await stop.first
    let report: Awaited<ReturnType<typeof running.close>>
    try {
      // Drains: requests in flight get drainTimeoutMs, then are cancelled; the log says how it went.
      report = await running.close()
    } finally {
      stop.release()
    }
    // Requests cancelled unfinished: an unclean stop, said in the exit code
    // too, so a supervisor or a deploy sees it without reading the log.
    return report.cutOff > 0 ? EXIT_CUT_OFF : 0
  },
}

/**
 * The line a stop during start-up gets, as the gateway's logger writes its
 * shutdown record (a JSON line on stderr, at info): a supervisor that stops
 * the gateway while it reads its config reads the same event as one that
 * stops it while it listens, not silence.
 */
function stoppedWhileStarting(io: Io, signal: NodeJS.Signals, logLevel: string): void {
  if (logLevel !== 'debug' && logLevel !== 'info') return
  io.stderr(
    `${JSON.stringify({
      level: 'info',
      time: Date.now(),
      pid: process.pid,
      hostname: hostname(),
      event: 'shutdown',
      signal,
      msg: `shutdown: ${signal} while starting: stopped before listening`,
    })}\n`,
  )
}

const LISTEN_HINT = ' (set --host or HOST; in a container, 0.0.0.0)'

const unresolvable = (host: string): string =>
  `hourglass gateway: cannot listen on ${host}: the host name does not resolve${LISTEN_HINT}`

/**
 * The address a host name resolves to: the first answer, as listen() would
 * take it. A name the resolver does not know is a bad argument (exit 2).
 * Dotted numbers that are no IPv4 address are asked too: the resolver reads
 * `0` as 0.0.0.0 and `127.1` as 127.0.0.1 (inet_aton's shorthands, which
 * listen() takes), and only those it cannot read (`256.1.1.1`) are refused,
 * as no IPv4 address. A resolver that fails (`EAI_AGAIN`: down, or too slow
 * to answer) says nothing of the name: a failure of this machine, exit 1,
 * and the same command may work once it is back.
 */
async function addressOf(host: string, from: string): Promise<string> {
  try {
    return (await lookup(host)).address
  } catch (error) {
    if (DOTTED_NUMBERS.test(host)) throw new UsageError(badHost(host, from, NOT_IPV4))
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOTFOUND') throw new UsageError(unresolvable(host))
    throw new Error(
      code === 'EAI_AGAIN'
        ? `cannot look up ${host}: the resolver failed for now (EAI_AGAIN), a fault of this machine's DNS, not of the name: try again, or set --host or HOST to an IP address`
        : `cannot look up ${host}: ${(error as Error).message}`,
      { cause: error },
    )
  }
}

const DOTTED_NUMBERS = /^[0-9.]+$/

const NOT_IPV4 = 'is not a valid IPv4 address'

const badHost = (host: string, from: string, why: string): string =>
  `hourglass gateway: ${from} '${printable(host, 64)}' ${why} (in a container, 0.0.0.0)`

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim()
}

function envPort(value: string): number {
  const n = /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN
  if (!Number.isSafeInteger(n) || n > 65_535) {
    throw new UsageError(
      `hourglass gateway: PORT must be a whole number from 0 to 65535, got '${printable(value)}'`,
    )
  }
  return n
}

const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/

/**
 * An IP address (an IPv6 one may be in brackets, as in a URL: `[::1]`), or
 * a host name that could be one. Dotted numbers that are no IPv4 address
 * pass here and are asked of the resolver (`addressOf`): `0` and
 * `127.1` are addresses to it, and to listen(). Brackets around anything
 * but an IPv6 address (`[localhost]`, `[127.0.0.1]`) are refused, as
 * startGateway refuses them.
 */
function checkHost(host: string, from: string): string {
  const bracketed = host.startsWith('[') && host.endsWith(']')
  const bare = bracketed ? host.slice(1, -1) : host
  if (bracketed ? isIPv6(bare) : isIP(bare) !== 0) return bare
  if (!bracketed && (DOTTED_NUMBERS.test(bare) || HOST_NAME.test(bare))) return bare
  throw new UsageError(
    badHost(
      host,
      from,
      bracketed ? 'is not an IPv6 address' : 'is not an IP address or a host name',
    ),
  )
}

/** Why listen() refused (EINVAL) an IPv6 address, with what to do about it. */
function unbindableIpv6(address: string): string {
  const zone = address.indexOf('%')
  if (zone !== -1) return `this machine has no interface ${address.slice(zone + 1)}`
  if (/^ff/i.test(address)) return 'a multicast address, which cannot be listened on'
  return 'not an address to listen on as written (a link-local IPv6 address needs its interface after a %, as in fe80::1%eth0)'
}
