import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { clearTimeout as realClearTimeout, setTimeout as realSetTimeout } from 'node:timers'
import { messageOf, refuseUnknownOptions } from '@hourglass/core'
import { shown } from '../fieldProblems.js'
import type { Fault, FaultPlan } from './Fault.js'
import { faultProblem } from './faultProblem.js'
import { type RequestLog, type RequestRecord, recordOf, recordRequests } from './recordRequests.js'

export interface FaultServer extends Pick<RequestLog, 'request' | 'clientGone'> {
  /** `http://127.0.0.1:<port>` (an IPv6 host in brackets: `http://[::1]:<port>`) */
  readonly url: string
  readonly port: number
  readonly server: Server
  /** Every request so far, in arrival order. */
  readonly records: readonly RequestRecord[]
  /** TCP connections open right now (a leak check for keep-alive clients). */
  readonly openConnections: number
  /** TCP connections accepted since start. */
  readonly totalConnections: number
  /** Resolves once no TCP connection is open (at once if none is). */
  idle(): Promise<void>
  /** Replace the plan for the requests still to come. */
  setPlan(plan: FaultPlan): void
  /** Drop every connection and stop listening. */
  close(): Promise<void>
}

export interface FaultServerOptions {
  /** Interface to bind; default `127.0.0.1`. */
  host?: string
  /** Keep-alive idle timeout of the server, ms; default 5000. */
  keepAliveTimeoutMs?: number
}

/**
 * A real HTTP server on a loopback port (0 = any free one) that misbehaves on
 * cue: each request gets the `Fault` the plan picks. Pending work (delays,
 * drips) stops as soon as the client goes away, and the record says whether
 * the server was still working at that moment.
 */
export async function faultServer(
  plan: FaultPlan,
  options: FaultServerOptions = {},
): Promise<FaultServer> {
  // Before the port opens: ignored, a misspelt option left its default, and a
  // fixed plan that is no Fault left every request unanswered.
  refuseUnknownOptions(options, OPTION_NAMES, 'faultServer()')
  // Before the port opens too: a host that is no string (`1234`) was read by
  // listen() as a backlog — the server bound every interface — and then
  // `host.includes` threw with it listening, leaked (the process never
  // exited); `''` bound every interface and gave the URL `http://:PORT`.
  const asked: unknown = options.host
  if (asked !== undefined && (typeof asked !== 'string' || asked === '')) {
    throw new TypeError(
      `faultServer: host must be a non-empty string (the interface to bind, e.g. '127.0.0.1' or '::1'), got ${shown(asked)}`,
    )
  }
  checkPlan(plan)
  let current = plan
  const server = createServer({ keepAliveTimeout: options.keepAliveTimeoutMs ?? 5000 })
  const log = recordRequests(server)
  const sockets = new Set<Socket>()
  let total = 0
  let idleWaiters: (() => void)[] = []
  server.on('connection', (socket: Socket) => {
    total++
    sockets.add(socket)
    socket.once('close', () => {
      sockets.delete(socket)
      if (sockets.size > 0) return
      const waiters = idleWaiters
      idleWaiters = []
      for (const resolve of waiters) resolve()
    })
  })
  // The first plan that threw or gave no fault: `close()` rejects with it.
  let planError: Error | undefined
  // Thrown from a request listener or a fault's timer it was an uncaught
  // exception, and the request hung until the test timed out: answer 500
  // naming it (or, once the headers are out, drop the connection), and fail
  // the test at close().
  const fail = (res: ServerResponse, index: number, error: unknown) => {
    // A plan or a fault may throw anything: String() of an object with no
    // prototype or a revoked Proxy (whose instanceof throws too) threw here.
    const failure = isReadableError(error) ? error : new Error(messageOf(error), { cause: error })
    planError ??= failure
    if (res.headersSent) {
      // The server's doing, not the client leaving.
      log.markServerAborted(index)
      log.markStopped(index)
      res.destroy()
      return
    }
    res.writeHead(500, { 'content-type': 'text/plain' })
    res.end(failure.message)
  }
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const record = recordOf(req)!
    // Drain the request body so the client can finish writing.
    req.resume()
    try {
      const fault = pick(current, record)
      serve(fault, res, {
        stop: () => log.markStopped(record.index),
        serverAborted: () => log.markServerAborted(record.index),
        fail: (error) => {
          const message = messageOf(error)
          fail(
            res,
            record.index,
            new Error(
              `faultServer: the ${fault.type} Fault for request ${record.index} failed: ${message}`,
              { cause: error },
            ),
          )
        },
      })
    } catch (error) {
      fail(res, record.index, error)
    }
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  const host = options.host ?? '127.0.0.1'
  return {
    // `http://::1:80` is no URL: an IPv6 literal goes in brackets.
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    server,
    records: log.records,
    request: log.request,
    clientGone: log.clientGone,
    get openConnections() {
      return sockets.size
    },
    get totalConnections() {
      return total
    },
    idle() {
      if (sockets.size === 0) return Promise.resolve()
      return new Promise<void>((resolve) => idleWaiters.push(resolve))
    },
    setPlan(next) {
      checkPlan(next)
      current = next
    },
    close() {
      // The server hanging up is no client departure: closeAllConnections()
      // fires each response's 'close', which recorded the client as gone
      // while the server was still working — the very zombie-work figure a
      // test reads, passing on the bug it looks for.
      for (const record of log.records) {
        if (record.finishedAt === undefined && record.clientGoneAt === undefined) {
          log.markServerAborted(record.index)
        }
      }
      log.detach()
      return new Promise<void>((resolve, reject) => {
        server.close(() => (planError === undefined ? resolve() : reject(planError)))
        server.closeAllConnections()
      })
    },
  }
}

const OPTION_NAMES = Object.keys({
  host: true,
  keepAliveTimeoutMs: true,
} satisfies Record<keyof FaultServerOptions, true>)

/** A fixed plan is checked once, where it is given; a function's faults as it gives them. */
function checkPlan(plan: FaultPlan): void {
  if (typeof plan === 'function') return
  if (isFault(plan)) {
    const problem = faultProblem(plan)
    if (problem === undefined) return
    throw new TypeError(`faultServer: the plan's ${plan.type} Fault is invalid: ${problem}`)
  }
  throw new TypeError(`faultServer: the plan is no Fault (got ${got(plan)})`)
}

function isFault(value: unknown): value is Fault {
  return typeof value === 'object' && value !== null && FAULT_TYPES.has((value as Fault).type)
}

const FAULT_TYPES: ReadonlySet<unknown> = new Set<Fault['type']>([
  'respond',
  'stream',
  'headers-then-stall',
  'bytes-then-stall',
  'close',
  'reset',
  'retry-after',
  'hang',
])

/** The plan's fault for this request; throws, naming the request, when the plan fails or gives none. */
function pick(plan: FaultPlan, record: RequestRecord): Fault {
  let fault: unknown
  try {
    fault =
      typeof plan === 'function'
        ? plan({ method: record.method, url: record.url, headers: record.headers }, record.index)
        : plan
  } catch (error) {
    const message = messageOf(error)
    throw new Error(`faultServer: the plan threw for request ${record.index}: ${message}`, {
      cause: error,
    })
  }
  if (isFault(fault)) {
    const problem = faultProblem(fault)
    if (problem === undefined) return fault
    throw new TypeError(
      `faultServer: the plan's ${fault.type} Fault for request ${record.index} is invalid: ${problem}`,
    )
  }
  // An async plan's rejection would be unhandled on top of the 500 that names it.
  if (isThenable(fault)) fault.then(undefined, () => {})
  throw new TypeError(
    `faultServer: the plan gave no Fault for request ${record.index} (got ${got(fault)})`,
  )
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function'
}

/** A value that is no Fault, described; a Promise by name (`{}` said nothing of an async plan). */
function got(value: unknown): string {
  if (isThenable(value)) {
    return 'a Promise: a plan gives its Fault synchronously, it cannot be async'
  }
  return typeof value === 'object' && value !== null ? describe(value) : String(value)
}

interface Marks {
  stop(): void
  serverAborted(): void
  /** A step threw (a field `faultProblem` does not catch): answer or drop, and fail `close()`. */
  fail(error: unknown): void
}

function serve(fault: Fault, res: ServerResponse, marks: Marks): void {
  const pending = new Set<() => void>()
  const later = (ms: number, fn: () => void) => {
    const run = () => {
      pending.delete(cancel)
      try {
        fn()
      } catch (error) {
        marks.fail(error)
      }
    }
    // `0` is "at once": `node:timers`' own setTimeout, which fake timers
    // (`vi.useFakeTimers()`, Jest's) do not replace as they do the global.
    // A `{ type: 'respond' }` waited on a faked timer, and a test that faked
    // time (to skip its client's back-off) hung on it. A delay is time, and
    // moves with them.
    let cancel: () => void
    if (ms > 0) {
      const timer = setTimeout(run, ms)
      cancel = () => clearTimeout(timer)
    } else {
      const timer = realSetTimeout(run, 0)
      cancel = () => realClearTimeout(timer)
    }
    pending.add(cancel)
  }
  // The client left: stop every pending step (no zombie work in the fault server itself).
  res.once('close', () => {
    for (const cancel of pending) cancel()
    pending.clear()
    marks.stop()
  })

  switch (fault.type) {
    case 'respond':
      later(fault.delayMs ?? 0, () => {
        res.writeHead(fault.status ?? 200, { 'content-type': 'text/plain', ...fault.headers })
        res.end(fault.body ?? 'ok')
      })
      return
    case 'stream':
      later(fault.delayMs ?? 0, () => {
        res.writeHead(fault.status ?? 200, { 'content-type': 'application/octet-stream' })
        res.flushHeaders()
        let sent = 0
        const chunk = 'x'.repeat(fault.chunkBytes ?? 16)
        // Checked before each write: `chunks: 0` is headers then the end, no chunk.
        const drip = () => {
          if (sent >= fault.chunks) {
            res.end()
            return
          }
          res.write(chunk)
          sent++
          if (sent >= fault.chunks) res.end()
          else later(fault.intervalMs, drip)
        }
        later(fault.intervalMs, drip)
      })
      return
    case 'headers-then-stall':
      later(fault.delayMs ?? 0, () => {
        res.writeHead(fault.status ?? 200, { 'content-type': 'text/plain', ...fault.headers })
        res.flushHeaders()
      })
      return
    case 'bytes-then-stall':
      later(fault.delayMs ?? 0, () => {
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          // At least 1: `bytes: 0` announced 0 and sent a complete, empty answer.
          'content-length': String(fault.declaredBytes ?? Math.max(fault.bytes * 10, 1)),
        })
        res.write('x'.repeat(fault.bytes))
      })
      return
    case 'close':
    case 'reset':
      later(fault.delayMs ?? 0, () => {
        marks.serverAborted()
        marks.stop()
        if (fault.type === 'reset') res.socket?.resetAndDestroy()
        else res.socket?.destroy()
      })
      return
    case 'retry-after': {
      const value =
        typeof fault.retryAfter === 'number'
          ? String(fault.retryAfter)
          : fault.retryAfter.toUTCString()
      res.writeHead(fault.status, {
        'content-type': 'application/json',
        'retry-after': value,
        ...fault.headers,
      })
      res.end(fault.body ?? JSON.stringify({ error: { type: statusText(fault.status) } }))
      return
    }
    case 'hang':
      return
  }
}

function statusText(status: 429 | 503 | 529): string {
  if (status === 429) return 'rate_limit_error'
  if (status === 529) return 'overloaded_error'
  return 'service_unavailable'
}

function describe(value: object): string {
  try {
    return JSON.stringify(value)
  } catch {
    return Object.prototype.toString.call(value)
  }
}

/** An Error whose message reads: one a revoked Proxy's `instanceof` or a getter would not throw out of. */
function isReadableError(error: unknown): error is Error {
  try {
    return error instanceof Error && typeof error.message === 'string'
  } catch {
    return false
  }
}
