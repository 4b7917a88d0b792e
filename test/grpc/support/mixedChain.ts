import {
  type Client,
  credentials,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServiceError,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js'
import { currentDeadline, DEADLINE_HEADER, type Deadline, wait } from '@hourglass/core'
import { deadline, deadlineErrors } from '@hourglass/express'
import { createFetch } from '@hourglass/fetch'
import {
  deadlineInterceptor,
  deadlineServerInterceptor,
  fromGrpcError,
  type GrpcClientStartMessage,
  type GrpcServerStartMessage,
  grpcChannels,
  deadlineErrors as grpcDeadlineErrors,
} from '@hourglass/grpc'
import express, { type NextFunction, type Request, type Response } from 'express'
import { type Listening, listen } from '../../support/listen.js'

/**
 * Express → gRPC → Express, every hop on the real thing over loopback:
 *
 *     client ─▶ edge    Express 5 + deadline()      GET /ask?mode=…
 *            ─▶ gRPC    grpc-js, deadlineInterceptor → deadlineServerInterceptor (HTTP/2)
 *            ─▶ inner   Express 5 + deadline(), via @hourglass/fetch createFetch
 *
 * `mode` decides what the inner handler does: `fast` answers at once; `hang`
 * waits for its deadline's signal (the work that must be stopped). `ignore`
 * makes the gRPC handler ignore the inner 504 and keep going, so the gRPC
 * hop's own deadline has to answer.
 */
export type Mode = 'fast' | 'hang' | 'ignore'

export interface HopStart {
  /** The hop's deadline (the handler's). */
  deadline: Deadline
  /** The budget the hop read from its caller, ms. */
  budgetMs: number
  /**
   * The deadline's `expiresAt` as the hop started. Read later, a deadline
   * disposed by then (a gRPC call its handler answered before its own
   * deadline) reads Infinity: a lateness figure of −Infinity, never judged.
   */
  expiresAt: number
  /** The `id` the client gave (`/ask?id=…`), carried to every hop: requests in flight at once told apart. */
  id?: string | undefined
}

export interface InnerWork {
  deadline: Deadline
  id?: string | undefined
  /** When its deadline's signal aborted, performance.now() ms. */
  abortedAt?: number
  reason?: unknown
}

export interface MixedChain {
  edgeUrl: string
  /** Starts, in arrival order, of each hop. */
  readonly edgeStarts: HopStart[]
  readonly grpcStarts: HopStart[]
  readonly innerStarts: HopStart[]
  /** What the gRPC client sent (budget given, header written). */
  readonly grpcCalls: GrpcClientStartMessage[]
  /** The inner handlers' work, in arrival order. */
  readonly innerWork: InnerWork[]
  /** When the gRPC handler got the inner answer (status) or its fetch failed, performance.now() ms. */
  readonly innerAnswers: Array<{
    at: number
    status?: number
    error?: unknown
    id?: string | undefined
  }>
  /** When the edge handler got the gRPC answer, performance.now() ms. */
  readonly grpcAnswers: Array<{ at: number; code: number; id?: string | undefined }>
  /** Resolves when `count` inner handlers have started. */
  innerStarted(count: number): Promise<void>
  close(): Promise<void>
}

/** The gRPC metadata key that carries the client's `id` to the gRPC hop's start. */
const ID_METADATA = 'x-ask-id'

const json = {
  serialize: (value: unknown): Buffer => Buffer.from(JSON.stringify(value ?? null)),
  deserialize: (bytes: Buffer): unknown => JSON.parse(bytes.toString('utf8')),
}

const askService = {
  ask: {
    path: '/hourglass.chain.Middle/Ask',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  },
}

const MiddleClient = makeGenericClientConstructor(askService, 'Middle')

interface Middle extends Client {
  ask(
    request: unknown,
    metadata: Metadata,
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): unknown
}

type Handler = (req: Request, res: Response) => Promise<void>
const route =
  (fn: Handler) =>
  (req: Request, res: Response, next: NextFunction): void => {
    fn(req, res).catch(next)
  }

export async function startMixedChain(): Promise<MixedChain> {
  const edgeStarts: HopStart[] = []
  const grpcStarts: HopStart[] = []
  const innerStarts: HopStart[] = []
  const grpcCalls: GrpcClientStartMessage[] = []
  const innerWork: InnerWork[] = []
  const innerAnswers: MixedChain['innerAnswers'] = []
  const grpcAnswers: MixedChain['grpcAnswers'] = []
  const waiting: Array<{ count: number; resolve: () => void }> = []

  /** The `id` query parameter, if any. */
  const idOf = (req: Request): string | undefined =>
    typeof req.query.id === 'string' ? req.query.id : undefined
  /** What an Express hop read from its caller: the header (no hop here clamps it). */
  const httpStart = (req: Request): HopStart => ({
    deadline: req.deadline,
    budgetMs: Number(req.headers[DEADLINE_HEADER]),
    expiresAt: req.deadline.expiresAt,
    id: idOf(req),
  })
  const onGrpcStart = (m: GrpcServerStartMessage) => {
    const [id] = m.metadata.get(ID_METADATA)
    grpcStarts.push({
      deadline: m.deadline,
      budgetMs: m.budgetMs,
      expiresAt: m.deadline.expiresAt,
      id: typeof id === 'string' ? id : undefined,
    })
  }
  const onGrpcCall = (m: GrpcClientStartMessage) => grpcCalls.push(m)
  grpcChannels.serverStart.subscribe(onGrpcStart)
  grpcChannels.clientStart.subscribe(onGrpcCall)

  // Inner: the HTTP service the gRPC handler calls.
  const inner = express()
  inner.use(deadline({ reserveMs: 10 }))
  inner.get(
    '/work',
    route(async (req, res) => {
      innerStarts.push(httpStart(req))
      const work: InnerWork = { deadline: req.deadline, id: idOf(req) }
      innerWork.push(work)
      for (const w of waiting.filter((w) => innerWork.length >= w.count)) {
        waiting.splice(waiting.indexOf(w), 1)
        w.resolve()
      }
      if (req.query.mode === 'fast') {
        res.json({ innerBudgetMs: Math.round(req.deadline.budgetMs) })
        return
      }
      // Work that takes as long as it is allowed to: it must be stopped.
      await new Promise<void>((resolve) =>
        req.deadline.signal.addEventListener(
          'abort',
          () => {
            work.abortedAt = performance.now()
            work.reason = req.deadline.signal.reason
            resolve()
          },
          { once: true },
        ),
      )
    }),
  )
  inner.use(deadlineErrors())
  const innerServer = await listen(inner)

  // Middle: the gRPC service, calling inner over HTTP with createFetch.
  const fetch = createFetch()
  // The gRPC hop keeps 50 ms: its handler's deadline must end before its
  // caller's (the grpc-timeout it received is relative, so the call's transit
  // time is added on its side), and on a loaded machine that transit alone can
  // pass 10 ms.
  const grpcServer = new Server({ interceptors: [deadlineServerInterceptor({ reserveMs: 50 })] })
  grpcServer.addService(
    askService,
    grpcDeadlineErrors({
      async ask(
        call: ServerUnaryCall<{ mode: Mode; id?: string }, unknown>,
        callback: sendUnaryData<unknown>,
      ) {
        const { mode, id } = call.request
        const innerMode = mode === 'ignore' ? 'hang' : mode
        const query = id === undefined ? '' : `&id=${encodeURIComponent(id)}`
        try {
          // No deadline passed: createFetch reads the gRPC call's from the context.
          const r = await fetch(`${innerServer.url}/work?mode=${innerMode}${query}`)
          innerAnswers.push({ at: performance.now(), status: r.status, id })
          const body = (await r.json()) as Record<string, unknown>
          if (r.status === 504 && mode !== 'ignore') {
            callback({
              code: status.DEADLINE_EXCEEDED,
              details: 'the inner service ran out of time',
            })
            return
          }
          if (mode === 'ignore') {
            // Keep working past the inner answer until our own deadline ends
            // the call (the rejection that follows is swallowed by deadlineErrors).
            await wait(Number.POSITIVE_INFINITY, { deadline: currentDeadline() })
          }
          callback(null, { ...body, grpcBudgetMs: Math.round(grpcStarts.at(-1)?.budgetMs ?? 0) })
        } catch (error) {
          innerAnswers.push({ at: performance.now(), error, id })
          throw error
        }
      },
    }),
  )
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) =>
      error ? reject(error) : resolve(port),
    ),
  )
  const middle = new MiddleClient(`127.0.0.1:${grpcPort}`, credentials.createInsecure(), {
    interceptors: [deadlineInterceptor()],
  }) as unknown as Middle

  // Edge: the HTTP ingress, calling the gRPC service.
  const edge = express()
  edge.use(deadline({ reserveMs: 10, maxMs: 10_000 }))
  edge.get(
    '/ask',
    route(async (req, res) => {
      const start = httpStart(req)
      edgeStarts.push(start)
      const { id } = start
      const mode = String(req.query.mode) as Mode
      const metadata = new Metadata()
      if (id !== undefined) metadata.set(ID_METADATA, id)
      // No deadline passed: the interceptor reads the request's from the context.
      const answer = await new Promise<{ error?: ServiceError; value?: unknown }>((resolve) =>
        middle.ask({ mode, id }, metadata, (error, value) =>
          resolve(error ? { error } : { value }),
        ),
      )
      grpcAnswers.push({ at: performance.now(), code: answer.error?.code ?? status.OK, id })
      // DEADLINE_EXCEEDED becomes core's DeadlineExceededError: deadlineErrors() answers 504.
      if (answer.error) throw fromGrpcError(answer.error)
      res.json({ ...(answer.value as object), edgeBudgetMs: Math.round(req.deadline.budgetMs) })
    }),
  )
  edge.use(deadlineErrors())
  const edgeServer: Listening = await listen(edge)

  return {
    edgeUrl: edgeServer.url,
    edgeStarts,
    grpcStarts,
    innerStarts,
    grpcCalls,
    innerWork,
    innerAnswers,
    grpcAnswers,
    innerStarted: (count) =>
      innerWork.length >= count
        ? Promise.resolve()
        : new Promise((resolve) => waiting.push({ count, resolve })),
    async close() {
      grpcChannels.serverStart.unsubscribe(onGrpcStart)
      grpcChannels.clientStart.unsubscribe(onGrpcCall)
      middle.close()
      grpcServer.forceShutdown()
      await fetch.close()
      await edgeServer.close()
      await innerServer.close()
    },
  }
}
