import diagnostics from 'node:diagnostics_channel'
import type { Socket } from 'node:net'
import {
  expressChannels,
  type IngressClientClosedMessage,
  type IngressEndMessage,
  type IngressStartMessage,
} from '@hourglass/express'
import { Agent, request } from 'undici'
import type { Chain } from './chain.js'
import { type FaultKind, pickBudget, pickFault } from './faultCatalogue.js'
import { loopbackPing } from './loopbackPing.js'
import { seededRandom, weighted } from './seededRandom.js'
import { until } from './until.js'

/** undici's: a request's head is about to be written to its socket (every undici copy publishes it). */
const SEND_HEADERS = 'undici:client:sendHeaders'

/** One request as one hop (edge or model service) saw it, performance.now() ms. */
export interface HopView {
  startedAt: number
  /** The caller's deadline as this hop received it: arrival + the budget it was sent. */
  dueAt: number
  /** When a plain timer armed for `dueAt` fired: the event loop's own lateness. */
  controlFiredAt: number | undefined
  /** When a byte sent over loopback as that timer fired arrived (see `loopbackPing`). */
  duePingAt: number | undefined
  /** When the hop saw its caller leave, if it did. */
  clientClosedAt: number | undefined
  /** When a byte sent over loopback at `clientClosedAt` arrived (see `loopbackPing`). */
  closedControlAt: number | undefined
  /**
   * For a request that reached this hop after its caller had already given up:
   * when a byte sent over loopback at its arrival arrived. The caller's
   * departure (a FIN already in this hop's socket) is read no sooner than that.
   */
  lateArrivalControlAt: number | undefined
  /** When the hop released the request (response over or abandoned). */
  endedAt: number | undefined
}

/** One client request through the chain and what the client saw. */
export interface Outcome {
  op: string
  kind: FaultKind
  budgetMs: number
  /** ms after sending when the client gave up and left, if it did. */
  abortAfterMs: number | undefined
  sentAt: number
  /** When the whole response (body included) had arrived; undefined if the client left first. */
  arrivedAt: number | undefined
  /** When the client aborted, if it did. */
  abortedAt: number | undefined
  status: number | undefined
  deadlineExpiredHeader: boolean
  body: string
  /** The caller's deadline as the edge measured it (arrival + budget), performance.now() ms. */
  dueAt: number | undefined
  /** When a plain timer armed at the edge for `dueAt` actually fired: the event loop's own lateness. */
  controlFiredAt: number | undefined
  edge: HopView | undefined
  service: HopView | undefined
  /** The client's own failure (not an HTTP status), when it did not abort. */
  clientError: unknown
}

export interface DriveOptions {
  requests: number
  concurrency: number
  seed: number
  /** Share of requests whose client leaves before its deadline; default 0.1. */
  disconnectShare?: number
  /** Fault for every request instead of the seeded mix. */
  fault?: FaultKind
  /** Another weighted mix of faults. */
  mix?: readonly (readonly [FaultKind, number])[]
  /** Budget for every request instead of the seeded mix. */
  budgetMs?: number
  /** Numbering offset for op ids (a soak drives several rounds). */
  firstOp?: number
}

/**
 * Send `requests` requests to the chain's edge, at most `concurrency` at a
 * time, each with a seeded fault, budget and (sometimes) an early disconnect.
 */
export async function drive(chain: Chain, options: DriveOptions): Promise<Outcome[]> {
  const random = seededRandom(options.seed)
  const agent = new Agent({ keepAliveTimeout: 10_000, connections: options.concurrency })
  const byOp = new Map<string, Outcome>()
  const edgePort = chain.edge.port
  const controls: Promise<void>[] = []
  const ping = await loopbackPing()
  // Decided at arrival: a destroyed socket no longer knows its local port.
  const hops = new WeakMap<object, [Outcome, 'edge' | 'service']>()
  const hopOf = (req: unknown): [Outcome, 'edge' | 'service'] | undefined => {
    const known = hops.get(req as object)
    if (known) return known
    const incoming = req as { headers: Record<string, string>; socket: { localPort?: number } }
    const outcome = byOp.get(incoming.headers['x-op-id'] ?? '')
    if (!outcome) return undefined
    const found: [Outcome, 'edge' | 'service'] = [
      outcome,
      incoming.socket.localPort === edgePort ? 'edge' : 'service',
    ]
    hops.set(req as object, found)
    return found
  }
  // Timers for moments still to come when the run is over are cleared then:
  // nothing can have been late relative to them.
  const armed = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>()
  const armControl = (due: number, fired: (at: number) => void) =>
    controls.push(
      new Promise((resolve) => {
        const entry = {
          resolve,
          // The delay is clamped at 0: from Node 23 a negative one emits a
          // TimeoutNegativeWarning (which processWatch counts as a problem);
          // Node 20 and 22 turn both a negative delay and 0 into 1 ms silently.
          timer: setTimeout(
            () => {
              armed.delete(entry)
              fired(performance.now())
              resolve()
            },
            Math.max(0, due - performance.now()),
          ),
        }
        armed.add(entry)
      }),
    )
  const onStart = (message: unknown) => {
    const { deadline, req, budgetMs } = message as IngressStartMessage
    const found = hopOf(req)
    if (!found) return
    const [outcome, hop] = found
    // The budget this hop was sent (budgetMs is after clamping; nothing here is clamped).
    const view: HopView = {
      startedAt: deadline.startedAt,
      dueAt: deadline.startedAt + budgetMs,
      controlFiredAt: undefined,
      duePingAt: undefined,
      clientClosedAt: undefined,
      closedControlAt: undefined,
      lateArrivalControlAt: undefined,
      endedAt: undefined,
    }
    outcome[hop] = view
    const caller = hop === 'service' ? outcome.edge : undefined
    if (caller && (caller.clientClosedAt !== undefined || performance.now() > caller.dueAt)) {
      controls.push(
        new Promise((resolve) =>
          ping.ping((arrived) => {
            view.lateArrivalControlAt = arrived
            resolve()
          }),
        ),
      )
    }
    if (hop === 'edge') outcome.dueAt = view.dueAt
    armControl(view.dueAt, (at) => {
      view.controlFiredAt = at
      if (hop === 'edge') outcome.controlFiredAt = at
      controls.push(
        new Promise((resolve) =>
          ping.ping((arrived) => {
            view.duePingAt = arrived
            resolve()
          }),
        ),
      )
    })
  }
  const onClosed = (message: unknown) => {
    const found = hopOf((message as IngressClientClosedMessage).req)
    const view = found?.[0][found[1]]
    if (!view) return
    view.clientClosedAt = performance.now()
    controls.push(
      new Promise((resolve) =>
        ping.ping((at) => {
          view.closedControlAt = at
          resolve()
        }),
      ),
    )
  }
  const onEnd = (message: unknown) => {
    const found = hopOf((message as IngressEndMessage).req)
    const view = found?.[0][found[1]]
    if (view) view.endedAt = performance.now()
  }
  // Requests the edge has sent to the model service, by op: the local port
  // of the edge's socket. One still in transit when the run is over (its
  // bytes in the service's socket, not yet read: on a loaded loop, turns
  // after the edge gave up and let go) is waited for like one that arrived.
  const sentToService = new Map<string, number>()
  const servicePort = chain.service.port
  const onSendHeaders = (message: unknown) => {
    const { headers, socket } = message as { headers: string; socket: Socket }
    if (socket.remotePort !== servicePort || socket.localPort === undefined) return
    const op = /\r\nx-op-id: ([^\r]*)\r\n/i.exec(headers)?.[1]
    if (op !== undefined && byOp.has(op)) sentToService.set(op, socket.localPort)
  }
  /** Sent to the model service, not yet read there, and its connection still open there. */
  const inTransit = (o: Outcome) => {
    const port = sentToService.get(o.op)
    return !o.service && port !== undefined && chain.serviceConnectionClosed(port) !== true
  }
  diagnostics.subscribe(expressChannels.clientClosed.name, onClosed)
  diagnostics.subscribe(expressChannels.end.name, onEnd)
  diagnostics.subscribe(expressChannels.start.name, onStart)
  diagnostics.subscribe(SEND_HEADERS, onSendHeaders)

  const plans = Array.from({ length: options.requests }, (_, i) => {
    const kind = options.fault ?? (options.mix ? weighted(random, options.mix) : pickFault(random))
    const budgetMs = options.budgetMs ?? pickBudget(random)
    const leaves = random() < (options.disconnectShare ?? 0.1) && budgetMs > 20
    return {
      op: String((options.firstOp ?? 0) + i),
      kind,
      budgetMs,
      seed: 1 + Math.floor(random() * 2 ** 30),
      abortAfterMs: leaves ? Math.round(5 + random() * budgetMs * 0.8) : undefined,
    }
  })

  const one = async (plan: (typeof plans)[number]): Promise<Outcome> => {
    const outcome: Outcome = {
      op: plan.op,
      kind: plan.kind,
      budgetMs: plan.budgetMs,
      abortAfterMs: plan.abortAfterMs,
      sentAt: performance.now(),
      arrivedAt: undefined,
      abortedAt: undefined,
      status: undefined,
      deadlineExpiredHeader: false,
      body: '',
      dueAt: undefined,
      controlFiredAt: undefined,
      edge: undefined,
      service: undefined,
      clientError: undefined,
    }
    byOp.set(plan.op, outcome)
    const controller = new AbortController()
    const timer =
      plan.abortAfterMs === undefined
        ? undefined
        : setTimeout(() => {
            outcome.abortedAt = performance.now()
            controller.abort()
          }, plan.abortAfterMs)
    try {
      const res = await request(`${chain.edge.url}/chain`, {
        method: 'POST',
        dispatcher: agent,
        signal: controller.signal,
        headers: {
          'x-deadline-remaining-ms': String(plan.budgetMs),
          'x-op-id': plan.op,
          'x-fault': plan.kind,
          'x-fault-seed': String(plan.seed),
        },
      })
      outcome.status = res.statusCode
      outcome.deadlineExpiredHeader = res.headers['x-deadline-expired'] === '1'
      outcome.body = await res.body.text()
      outcome.arrivedAt = performance.now()
    } catch (error) {
      if (outcome.abortedAt === undefined) outcome.clientError = error
    } finally {
      clearTimeout(timer)
    }
    return outcome
  }

  const outcomes: Outcome[] = []
  let next = 0
  const worker = async () => {
    while (next < plans.length) {
      const plan = plans[next++]!
      outcomes.push(await one(plan))
    }
  }
  try {
    await Promise.all(Array.from({ length: options.concurrency }, worker))
    // Every hop has released every request, every request sent on to the
    // model service has arrived there (and been released) or can no longer
    // arrive, and every control timer has fired.
    const held = (o: Outcome) =>
      (o.edge && !o.edge.endedAt) || (o.service && !o.service.endedAt) || inTransit(o)
    await until(() => !outcomes.some(held), 10_000, 'every hop to release its requests').catch(
      (error) => {
        const stuck = outcomes.filter(held)
        console.error(
          stuck
            .slice(0, 10)
            .map(
              (o) =>
                `${o.op} ${o.kind} ${o.budgetMs} ${o.status} edge ${JSON.stringify(o.edge)} service ${JSON.stringify(o.service)}${inTransit(o) ? ' (sent to the service, never read there)' : ''}`,
            )
            .join('\n'),
          stuck.length,
        )
        throw error
      },
    )
    for (const entry of armed) {
      clearTimeout(entry.timer)
      entry.resolve()
    }
    armed.clear()
    for (let settled = 0; settled < controls.length; settled = controls.length) {
      await Promise.all(controls.slice(settled))
    }
  } finally {
    diagnostics.unsubscribe(expressChannels.start.name, onStart)
    diagnostics.unsubscribe(expressChannels.clientClosed.name, onClosed)
    diagnostics.unsubscribe(expressChannels.end.name, onEnd)
    diagnostics.unsubscribe(SEND_HEADERS, onSendHeaders)
    await agent.close()
    await ping.close()
  }
  return outcomes.sort((a, b) => Number(a.op) - Number(b.op))
}
