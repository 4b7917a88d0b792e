import type { Socket } from 'node:net'
import { isDeadlineExceeded } from '@hourglass/core'
import { deadline, deadlineErrors } from '@hourglass/express'
import { createConnector, createFetch, type LookupFunction } from '@hourglass/fetch'
import {
  callModel,
  MemorySideEffectStore,
  type ModelAdapter,
  openAICompatible,
  idempotencyKey as operationKey,
  sideEffect,
} from '@hourglass/llm'
import { closedPort, type FaultServer, faultServer, startFakeProvider } from '@hourglass/testkit'
import express, { type NextFunction, type Request, type Response } from 'express'
import { Agent } from 'undici'
import type { CountingClock } from './CountingClock.js'
import { type FaultKind, isModelFault, modelReply, upstreamFault } from './faultCatalogue.js'
import { type Listening, listen } from './listen.js'
import { isHeadersSent, type ProcessWatch } from './processWatch.js'
import { seededRandom } from './seededRandom.js'
import { until } from './until.js'

/** Secrets the chain carries; the security suite proves none of them leaks. */
export const SECRETS = {
  edgeToken: 'Bearer hg-edge-token-7f3a9c1e5b',
  providerKey: 'sk-hourglass-provider-key-4d2b8e6a0c',
  ernieKey: 'sk-hourglass-ernie-key-9e1c7a3f5d',
} as const

/** A host whose name lookup never answers (served by the second hop's own lookup). */
export const NEVER_RESOLVES = 'dns-never.hourglass.test'

export interface ChainOptions {
  clock: CountingClock
  watch: ProcessWatch
  /** `maxMs` of the edge; default 10 000. */
  maxMs?: number
  /**
   * How long the hops' fetch pools keep an unused connection, ms; default
   * undici's (here 3 s: the servers' 5 s keep-alive hint less undici's 2 s
   * margin). `idle()` waits this long after the last request; the chaos run,
   * which waits for it twice, sets 1 s.
   */
  keepAliveMs?: number
}

/**
 * The three-hop chain the chaos, load, soak and security suites drive:
 *
 *     client → edge (Express + deadline) → @hourglass/fetch
 *            → model service (Express + deadline) → @hourglass/fetch → fault server
 *                                                 → callModel → fake provider (qwen, ernie)
 *
 * Every request names its fault (`x-fault`) and seed (`x-fault-seed`); the
 * upstreams read them, so one seed replays the whole run.
 */
export interface Chain {
  edge: Listening
  service: Listening
  upstream: FaultServer
  /** Fake provider requests, in arrival order. */
  providerRequests(): readonly { op: string; paid: boolean; outcome: string }[]
  /** Side-effect runs per operation id. */
  readonly effectRuns: Map<string, number>
  /** Requests the model service received, per operation id. */
  readonly serviceReceipts: Map<string, number>
  /** When the model service's upstream work for an op ended (fetch or callModel settled), performance.now() ms. */
  readonly upstreamSettledAt: Map<string, number>
  /** Every error that reached an app's error handlers (scanned for secrets by the security suite). */
  readonly errors: unknown[]
  /** Errors the apps turned into 502, by class name (expected transport failures). */
  readonly badGateways: Map<string, number>
  /** Lookups of NEVER_RESOLVES still waiting (each is abandoned by fetch, never answered). */
  readonly stuckLookups: number
  /**
   * Whether the model service's end of the connection from local port
   * `port` (a socket of the edge's fetch pool) has closed: a request sent on
   * it that the service has not read by then never arrives. `undefined`
   * while the service has not accepted that connection yet.
   */
  serviceConnectionClosed(port: number): boolean | undefined
  /** Forget every record kept so far (a soak's bookkeeping must not grow with it). */
  resetRecords(): void
  /**
   * Resolves once no hop holds a request: the edge and the model service have
   * none in flight (response open or handler still running, so the service's
   * upstream work has settled for every op it received), the hops' fetch
   * pools none running or queued, and the fault server none still working
   * (every record finished, its client gone, or dropped by the server). A
   * round's records are then complete and can be judged; unlike `idle()`, it
   * does not wait for pooled connections to close. A lookup of NEVER_RESOLVES
   * is not waited for: fetch abandons it. Rejects after `timeoutMs` (default
   * 10 s), naming what is still held.
   */
  settled(timeoutMs?: number): Promise<void>
  /**
   * Resolves once no hop holds a connection or a request: the edge, the model
   * service and the fault server have no connection open, and the hops' fetch
   * pools neither a connection nor an unfinished request (to the fake
   * provider either). Every piece of work is then over on every hop, and the
   * pools have let their connections go on their own, at their keep-alive
   * timeout (`keepAliveMs`). Rejects after `timeoutMs` (default 30 s), naming
   * what is still held.
   */
  idle(timeoutMs?: number): Promise<void>
  /** Close the hops' keep-alive pools and wait until every server has no connection left. */
  closePools(): Promise<void>
  close(): Promise<void>
}

export async function startChain(options: ChainOptions): Promise<Chain> {
  const { clock, watch } = options
  const upstream = await faultServer((req) =>
    upstreamFault(
      req.headers['x-fault'] as FaultKind,
      seededRandom(Number(req.headers['x-fault-seed'])),
    ),
  )
  const provider = await startFakeProvider({
    dialect: 'qwen',
    reply: (request) => {
      const text = JSON.stringify(request.body ?? '')
      const kind = /fault=([\w-]+)/.exec(text)?.[1] as FaultKind
      return modelReply(kind, seededRandom(Number(/seed=(\d+)/.exec(text)?.[1] ?? 1)))
    },
  })
  const refused = await closedPort()
  const effectRuns = new Map<string, number>()
  const serviceReceipts = new Map<string, number>()
  const upstreamSettledAt = new Map<string, number>()
  const badGateways = new Map<string, number>()
  const errors: unknown[] = []
  // Requests each hop has received and not let go of: counted from arrival
  // to the response's 'close', and again while the route's handler runs (it
  // goes on after the response closed when its client left: its fetch is
  // still being stopped).
  const inFlight = { edge: 0, service: 0 }
  const arrive =
    (hop: keyof typeof inFlight) => (_req: Request, res: Response, next: NextFunction) => {
      inFlight[hop]++
      res.once('close', () => inFlight[hop]--)
      next()
    }
  const working =
    (hop: keyof typeof inFlight, handler: (req: Request, res: Response) => Promise<void>) =>
    async (req: Request, res: Response) => {
      inFlight[hop]++
      try {
        await handler(req, res)
      } finally {
        inFlight[hop]--
      }
    }
  // Remembered 2 s: long enough for a request's retried turn (budgets here are ≤ 1 s), bounded for a soak.
  const effects = new MemorySideEffectStore()
  const remember = (error: unknown, _req: Request, _res: Response, next: NextFunction) => {
    errors.push(error)
    next(error)
  }
  let stuckLookups = 0
  const stuck: LookupFunction = (hostname, opts, callback) => {
    if (hostname === NEVER_RESOLVES) {
      stuckLookups++ // never answered: a resolver that went silent
      return
    }
    callback(null, opts.all ? [{ address: '127.0.0.1', family: 4 }] : '127.0.0.1', 4)
  }
  // The pools are built here, as createFetch builds its own (its connector, no
  // header or body timer of undici's), so their keep-alive can be set and
  // their connections counted.
  const { keepAliveMs } = options
  const pool = (connector: Parameters<typeof createConnector>[0]) =>
    new Agent({
      connect: createConnector(connector),
      headersTimeout: 0,
      bodyTimeout: 0,
      ...(keepAliveMs === undefined
        ? {}
        : { keepAliveTimeout: keepAliveMs, keepAliveMaxTimeout: keepAliveMs }),
    })
  const edgePool = pool({ clock })
  const servicePool = pool({ clock, lookup: stuck, dnsTimeoutMs: 200 })
  const edgeFetch = createFetch({ clock, dispatcher: edgePool })
  const serviceFetch = createFetch({
    clock,
    lookup: stuck,
    dnsTimeoutMs: 200,
    dispatcher: servicePool,
  })
  /** Connections a pool holds and requests it has not finished (queued, connecting, sent). */
  const held = (agent: Agent): [connections: number, requests: number] => {
    let connections = 0
    let requests = 0
    for (const origin of Object.values(agent.stats)) {
      connections += Number(origin.connected)
      requests += origin.size ?? 0
    }
    return [connections, requests]
  }
  const adapters: Record<'qwen' | 'ernie', ModelAdapter> = {
    qwen: openAICompatible({
      dialect: 'qwen',
      baseURL: `${provider.url}/compatible-mode/v1`,
      apiKey: SECRETS.providerKey,
      model: 'qwen-plus',
      fetch: serviceFetch,
    }),
    ernie: openAICompatible({
      dialect: 'ernie',
      baseURL: `${provider.url}/v2`,
      apiKey: SECRETS.ernieKey,
      model: 'ernie-4.0',
      fetch: serviceFetch,
    }),
  }

  const lastResort =
    (hop: string) => (error: unknown, _req: Request, res: Response, _next: NextFunction) => {
      if (isHeadersSent(error)) watch.appErrors.push(error)
      const name = (error as Error | undefined)?.constructor?.name ?? typeof error
      badGateways.set(`${hop}:${name}`, (badGateways.get(`${hop}:${name}`) ?? 0) + 1)
      if (res.headersSent) return
      res.status(502).json({ error: 'bad_gateway' })
    }

  // Hop 2: the model service.
  const work = async (req: Request, res: Response) => {
    const op = String(req.headers['x-op-id'])
    const kind = req.headers['x-fault'] as FaultKind
    serviceReceipts.set(op, (serviceReceipts.get(op) ?? 0) + 1)
    // The tool with a side effect; an agent that retries its turn calls it again.
    const effect = () =>
      sideEffect(
        operationKey({ op }),
        () => {
          effectRuns.set(op, (effectRuns.get(op) ?? 0) + 1)
          return op
        },
        { store: effects, ttlMs: 2000 },
      )
    await effect()
    const target =
      kind === 'refuse'
        ? `http://127.0.0.1:${refused}/work`
        : kind === 'dns-never'
          ? `http://${NEVER_RESOLVES}:${upstream.port}/work`
          : `${upstream.url}/work`
    try {
      const answer = await serviceFetch(target, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-op-id': op,
          'x-fault': kind,
          'x-fault-seed': String(req.headers['x-fault-seed']),
        },
        body: JSON.stringify({ op }),
        deadline: req.deadline,
      })
      const body = await answer.text()
      await effect() // the retried turn: must not run the tool again
      if (answer.status === 200) res.json({ op, upstream: body })
      else if (answer.status === 429) res.status(429).json({ error: 'rate_limited' })
      else res.status(502).json({ error: 'upstream_failed', status: answer.status })
    } finally {
      upstreamSettledAt.set(op, performance.now())
    }
  }
  const model = async (req: Request, res: Response) => {
    const op = String(req.headers['x-op-id'])
    const kind = req.headers['x-fault'] as FaultKind
    const seed = String(req.headers['x-fault-seed'])
    serviceReceipts.set(op, (serviceReceipts.get(op) ?? 0) + 1)
    try {
      const stream = callModel({
        models: [kind === 'llm-200-error-ernie' ? adapters.ernie : adapters.qwen],
        request: {
          messages: [{ role: 'user', content: `chaos op=${op} fault=${kind} seed=${seed}` }],
          maxTokens: 64,
          stream: true,
        },
        deadline: req.deadline,
        idempotencyKey: operationKey({ op }),
        retry: {
          // Waits small enough to fit the budgets, so retries really happen.
          delay: { baseDelayMs: 10, overloadFloorMs: 20, overloadJitterMs: 10 },
          budgets: false,
        },
        // Each op scripts its own fault: a cooldown shared across ops (the
        // process-wide default) would let one op's 429 refuse the others,
        // and the run would test admission instead of every fault.
        limits: { admission: false },
      })
      let text = ''
      for await (const event of stream) if (event.type === 'text') text += event.text
      res.json({ op, text })
    } finally {
      upstreamSettledAt.set(op, performance.now())
    }
  }
  const service = express()
  service.use(arrive('service'))
  service.use(deadline({ clock, maxMs: 30_000 }))
  service.use(express.json())
  service.post('/work', working('service', work))
  service.post('/model', working('service', model))
  service.use(remember, deadlineErrors())
  service.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    const kind = (error as { kind?: unknown } | null)?.kind
    if (
      !res.headersSent &&
      (kind === 'rate_limited' || (error as Error).name === 'RateLimitedError')
    ) {
      res.status(429).json({ error: 'rate_limited' })
      return
    }
    next(error)
  }, lastResort('service'))
  const serviceServer = await listen(service)
  // The service's connections by the caller's port, open (false) or closed
  // (true). The port is read at accept: a destroyed socket no longer knows
  // it. Loopback ports are handed out in turn across the ephemeral range,
  // so one does not come back to the same service within a round; closed
  // ones are forgotten between rounds.
  const serviceSockets = new Map<number, boolean>()
  serviceServer.server.on('connection', (socket: Socket) => {
    const port = socket.remotePort
    if (port === undefined) return
    serviceSockets.set(port, false)
    socket.once('close', () => serviceSockets.set(port, true))
  })

  // Hop 1: the edge.
  const forward = async (req: Request, res: Response) => {
    const kind = req.headers['x-fault'] as FaultKind
    const answer = await edgeFetch(
      `${serviceServer.url}${isModelFault(kind) ? '/model' : '/work'}`,
      {
        method: 'POST',
        headers: {
          authorization: SECRETS.edgeToken,
          'content-type': 'application/json',
          'x-op-id': String(req.headers['x-op-id']),
          'x-fault': kind,
          'x-fault-seed': String(req.headers['x-fault-seed']),
        },
        body: '{}',
        deadline: req.deadline,
      },
    )
    const body = await answer.text()
    if (answer.headers.get('x-deadline-expired')) res.set('x-deadline-expired', '1')
    res.status(answer.status).type('application/json').send(body)
  }
  const edge = express()
  edge.use(arrive('edge'))
  edge.use(deadline({ clock, maxMs: options.maxMs ?? 10_000 }))
  edge.post('/chain', working('edge', forward))
  edge.use(remember, deadlineErrors())
  edge.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (isDeadlineExceeded(error) && res.headersSent) return
    next(error)
  }, lastResort('edge'))
  const edgeServer = await listen(edge)
  let poolsClosed = false
  const stillHeld = async () => {
    const [edgeConnections, edgeRequests] = held(edgePool)
    const [serviceConnections, serviceRequests] = held(servicePool)
    return {
      'edge connections': await edgeServer.connections(),
      'service connections': await serviceServer.connections(),
      'fault server connections': upstream.openConnections,
      'edge fetch connections': edgeConnections,
      'edge fetch requests': edgeRequests,
      'service fetch connections': serviceConnections,
      'service fetch requests': serviceRequests,
    }
  }

  const stillWorking = () => ({
    'edge requests': inFlight.edge,
    'service requests': inFlight.service,
    'edge fetch requests': held(edgePool)[1],
    'service fetch requests': held(servicePool)[1],
    'fault server requests': upstream.records.filter(
      (r) => r.finishedAt === undefined && r.clientGoneAt === undefined && !r.serverAborted,
    ).length,
  })

  return {
    edge: edgeServer,
    service: serviceServer,
    upstream,
    providerRequests: () =>
      provider.requests.map((r) => ({
        op: /op=(\S+)/.exec(JSON.stringify(r.body ?? ''))?.[1] ?? '?',
        paid: r.paid,
        outcome: r.outcome,
      })),
    effectRuns,
    errors,
    serviceReceipts,
    upstreamSettledAt,
    badGateways,
    get stuckLookups() {
      return stuckLookups
    },
    serviceConnectionClosed: (port) => serviceSockets.get(port),
    resetRecords() {
      // No waiter is pending between rounds, so the fault server's log can start over.
      ;(upstream.records as unknown[]).length = 0
      for (const [port, closed] of serviceSockets) if (closed) serviceSockets.delete(port)
      provider.reset()
      for (const m of [effectRuns, serviceReceipts, upstreamSettledAt, badGateways]) m.clear()
      errors.length = 0
    },
    async settled(timeoutMs = 10_000) {
      const total = () => Object.values(stillWorking()).reduce((sum, n) => sum + n, 0)
      await until(() => total() === 0, timeoutMs, '').catch(() => {
        throw new Error(
          `timed out after ${timeoutMs} ms waiting for every hop to finish its requests, still working: ${JSON.stringify(stillWorking())}`,
        )
      })
    },
    async idle(timeoutMs = 30_000) {
      const started = performance.now()
      let timer: NodeJS.Timeout | undefined
      try {
        // The fault server says when its last connection closes (mostly the
        // last to); the rest is counted from then on.
        await Promise.race([
          upstream.idle(),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, timeoutMs)
          }),
        ])
      } finally {
        clearTimeout(timer)
      }
      const total = async () => Object.values(await stillHeld()).reduce((sum, n) => sum + n, 0)
      const left = Math.max(0, timeoutMs - (performance.now() - started))
      await until(async () => (await total()) === 0, left, '').catch(async () => {
        throw new Error(
          `timed out after ${timeoutMs} ms waiting for every hop to let go, still held: ${JSON.stringify(await stillHeld())}`,
        )
      })
    },
    async closePools() {
      if (poolsClosed) return
      poolsClosed = true
      await Promise.all([edgePool.close(), servicePool.close()])
      const open = async () =>
        (await edgeServer.connections()) +
        (await serviceServer.connections()) +
        upstream.openConnections
      await until(async () => (await open()) === 0, 5000, 'every hop to close its connections')
    },
    async close() {
      await edgeServer.close()
      await serviceServer.close()
      // Destroyed, not closed: a pool's close() waits for its requests, and a
      // test that failed on a request never stopped would hang here too.
      await Promise.all([edgePool.destroy(), servicePool.destroy()])
      await Promise.all([upstream.close(), provider.close()])
    },
  }
}
