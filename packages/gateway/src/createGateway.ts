import type { IncomingMessage, ServerResponse } from 'node:http'
import { type Clock, isClock, resolveIngressOptions, systemClock, wait } from '@hourglass/core'
import { closeIfOrphaned, deadline } from '@hourglass/express'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import express, {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express'

import { createAdapters, targetKey } from './call/createAdapters.js'
import { defaultBudgetProblem } from './config/defaultBudgetProblem.js'
import { GatewayConfigError } from './config/GatewayConfigError.js'
import type { GatewayConfig } from './config/gatewayConfigSchema.js'
import { parseGatewayConfig } from './config/parseGatewayConfig.js'
import type { GatewayContext } from './GatewayContext.js'
import { bodyError } from './http/bodyError.js'
import { chatCompletions, disposeHandlerDeadline, handlerDeadline } from './http/chatCompletions.js'
import { behindLastAnswer, closeAfterAnswer } from './http/closeAfterAnswer.js'
import { healthz, type RedisState, readyz } from './http/health.js'
import { isGatewayPath } from './http/isGatewayPath.js'
import { jsonBody } from './http/jsonBody.js'
import { methodNotAllowed } from './http/methodNotAllowed.js'
import { pathError } from './http/pathError.js'
import { loggedPathOf } from './http/pathOf.js'
import { type DrainReport, RequestTracker } from './http/RequestTracker.js'
import { bodyStillOwed } from './http/readBody.js'
import { currentRequest, REQUEST_ID_HEADER, requestIdFrom, scopeOf } from './http/requestScope.js'
import { modelObject, retrieveModel } from './http/retrieveModel.js'
import { sendError } from './http/sendError.js'
import { sendJson } from './http/sendJson.js'
import { type GatewayRedisClient, isGatewayRedisClient } from './limits/GatewayRedisClient.js'
import { LimitsRedisClient } from './limits/LimitsRedisClient.js'
import { RedisHealth } from './limits/RedisHealth.js'
import { RetiredKeys } from './limits/RetiredKeys.js'
import { TrackedCooldownStore } from './limits/TrackedCooldownStore.js'
import { WaitTimedAdmission } from './limits/WaitTimedAdmission.js'
import { type ModelPrice, ProviderLimits, RedisCooldownStore, RetryBudgetRegistry } from './llm.js'
import { createLog } from './log/createLog.js'
import type { GatewayLogger, LogLevel } from './log/GatewayLogger.js'
import { publishedNames } from './log/publishedNames.js'
import { redactSecrets } from './log/redactSecrets.js'
import { secretHeaderValues } from './log/secretHeaderValues.js'
import { GatewayMetrics } from './metrics/GatewayMetrics.js'
import { optionError } from './optionError.js'
import { createRedisClient, redisPassword } from './redisClient.js'
import { GATEWAY_OPTION_NAMES, refuseUnknownGatewayOptions } from './refuseUnknownGatewayOptions.js'
import { modelNames } from './routing/resolveModel.js'

/** `replyReserveMs` when none is given: time kept back to write the OpenAI-shaped 504, in ms. */
export const DEFAULT_REPLY_RESERVE_MS = 25

export interface GatewayOptions {
  /**
   * Where logs go: your pino logger (the gateway logs through a child of it,
   * which keeps your `redact`; its own credential fields it blanks itself)
   * or a function receiving each record as pino wrote it.
   * Default: pino, JSON lines on stderr. Keys are redacted before either sees anything.
   */
  logger?: GatewayLogger | undefined
  /**
   * The least severe line written by the default logger or a function
   * logger (`debug`, `info`, `warn`, `error`); your pino logger keeps its
   * own level. Default `info`: one `request` line per request, a `warn` line
   * per attempt that did not answer; `debug` adds the answering attempt's.
   */
  logLevel?: LogLevel | undefined
  /** Mount @hourglass/express's `deadline()` inside the router. Default true; false when your app mounts it. */
  mountDeadline?: boolean | undefined
  /**
   * Time kept back to write an OpenAI-shaped 504 (or a stream's error event)
   * before the request's deadline, in ms. Default 25; 0 = the ingress
   * middleware's plain 504 answers instead. Must be less than the config's
   * `deadline.defaultMs`.
   */
  replyReserveMs?: number | undefined
  /**
   * Streams: longest wait for the first token per attempt, in ms, before it
   * counts as a timeout (the next model is asked). Default: the config's
   * `policy.firstTokenTimeoutMs`, else 0 = the deadline only. Given, it
   * replaces the config's.
   */
  firstTokenTimeoutMs?: number | undefined
  /** Largest request body, in bytes. Default 4 MiB. */
  maxBodyBytes?: number | undefined
  /**
   * Shares cooldowns and limits through this client instead of one made
   * from `config.redis.url`: an ioredis client (5 or 6), or anything of the
   * same shape (`status`, `eval`, `evalsha`). Left open by `close()`.
   */
  redis?: GatewayRedisClient | undefined
  /** Per-provider retry budgets (gRPC retry throttling), also charged for SDK retries. Default: one registry with llm's defaults; `false` = none. */
  retryBudgets?: RetryBudgetRegistry | false | undefined
  /** The fetch whose `dispatcher` every adapter sends through. Default: one `createFetch` with generous header/body timeouts. */
  fetch?: HourglassFetch | undefined
  /** Time source for deadlines, admission and the limits' Redis back-off (tests). Default the system clock. */
  clock?: Clock | undefined
  /** Where `{ "env": NAME }` values resolve when `config` is not validated yet. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>> | undefined
  /** `close()` waits this long for requests in flight before cancelling them, in ms. Default 10 000; 0 = cancel at once. */
  drainTimeoutMs?: number | undefined
  /**
   * End the wait for an answer (a stream's first token) at the OpenAI SDK's
   * own timeout: openai-node's `X-Stainless-Timeout`, from the request's
   * head, and openai-python's `X-Stainless-Read-Timeout`, from the end of its
   * body (httpx starts its read timeout once the upload is out); the sooner
   * wins. A stream's keep-alive at half the read timeout does not depend on
   * it. Default true.
   */
  trustStainlessTimeout?: boolean | undefined
  /** Serve `GET /metrics` (Prometheus text format). Default true; false when it must not share the API's port. */
  metrics?: boolean | undefined
}

/** An Express router serving the gateway, plus `close()` for its connections. */
export type GatewayRouter = Router & {
  /** The validated config in use. */
  readonly config: GatewayConfig
  /**
   * Resolves true once the Redis client the gateway made from `config.redis.url`
   * is connected (false after `timeoutMs`, default 2000; true at once without
   * one). Until then limits and cooldowns are counted locally.
   */
  ready(timeoutMs?: number): Promise<boolean>
  /**
   * Where limits and cooldowns are counted, as the last `/readyz` check
   * established it (no round trip): the same answer `/readyz` gave, kept
   * current by what needs no round trip — a lost connection reads
   * `unreachable`, a limit or cooldown command that succeeds `shared`, one
   * that fails `local-fallback` until a probe's write is taken again.
   */
  redisState(): RedisState
  /**
   * Drains, then closes: API requests arriving from now on get 503
   * `shutting_down` and `/readyz` 503; those in flight get `drainTimeoutMs`
   * to finish, then are cancelled (503 / a stream error event) and cut; one
   * log line says how it went (`shutdown: drained N in X ms[, M cut off]`,
   * API requests only: a probe or scrape in flight is not waited for).
   * Then upstream connections, a Redis client the gateway created itself, and
   * the metrics close. Safe to call twice (both resolve the same report).
   *
   * Resolves how the drain went: `cutOff > 0` means requests were cancelled
   * unfinished, an unclean stop worth telling a supervisor (the CLI exits 3).
   */
  close(): Promise<DrainReport>
  /**
   * Writes one record through the gateway's logger — its level, redaction
   * and secret scrub, the same JSON lines — for what an app has to say about
   * the gateway (the CLI's forced exit on a second signal). `fields.message`
   * becomes the line's `msg`.
   */
  log(level: LogLevel, event: string, fields?: Record<string, unknown>): void
  /**
   * Serves this gateway's metrics (Prometheus text format, what `GET
   * /metrics` answers; 503 after `close()`) on a server of your own: with
   * `metrics: false`, mount it where only your scraper reaches (an admin
   * port), e.g. `admin.get('/metrics', gateway.serveMetrics)`.
   */
  serveMetrics(req: IncomingMessage, res: ServerResponse): void
}

/**
 * One OpenAI-compatible endpoint over every configured provider:
 * `POST /v1/chat/completions` (streamed or not), `GET /v1/models`,
 * `GET /healthz`, `GET /readyz`, `GET /metrics`. Mount it with
 * `app.use(createGateway(config))`. The config is validated here (a
 * `GatewayConfigError` names each bad field), so a typo fails at start, not
 * on the first request.
 */
export function createGateway(config: unknown, options: GatewayOptions = {}): GatewayRouter {
  return buildGateway(config, options, false, 'createGateway')
}

/**
 * The gateway `startGateway` serves: there every request is the gateway's
 * (it answers 404 for any path it has no route for), so every request is
 * tracked, given a deadline and drained. @internal
 */
export function createStandaloneGateway(config: unknown, options: GatewayOptions): GatewayRouter {
  return buildGateway(config, options, true, 'startGateway')
}

function buildGateway(
  config: unknown,
  options: GatewayOptions,
  ownsEveryPath: boolean,
  // What an option error names: the function the user called.
  taker: 'createGateway' | 'startGateway',
): GatewayRouter {
  refuseUnknownGatewayOptions(options, GATEWAY_OPTION_NAMES, `${taker}()`)
  checkObjectOptions(options, taker)
  const serveMetrics = booleanOption(taker, 'metrics', options.metrics, true)
  // `'false'` from an environment variable read as on, as any non-`false` did.
  const mountDeadline = booleanOption(taker, 'mountDeadline', options.mountDeadline, true)
  const trustStainlessTimeout = booleanOption(
    taker,
    'trustStainlessTimeout',
    options.trustStainlessTimeout,
    true,
  )
  const valid = parseGatewayConfig(config, { env: options.env })
  // Checked before anything is opened (Redis, sockets): a bad option leaves nothing running.
  const drainTimeoutMs = msOption(taker, 'drainTimeoutMs', options.drainTimeoutMs, 10_000)
  const maxBodyBytes = bytesOption(taker, 'maxBodyBytes', options.maxBodyBytes, 4 * 1024 * 1024)
  const replyReserveMs = msOption(
    taker,
    'replyReserveMs',
    options.replyReserveMs,
    DEFAULT_REPLY_RESERVE_MS,
  )
  if (options.replyReserveMs !== undefined && replyReserveMs >= valid.deadline.defaultMs) {
    // The handler's deadline is the request's less this: as large as the
    // default budget, every request that names no budget would be a 504 at 0 ms.
    throw optionError(
      taker,
      'replyReserveMs',
      `less than the config's deadline.defaultMs (${valid.deadline.defaultMs} ms)`,
      replyReserveMs,
    )
  }
  // Said at the config's field: the reserves left nothing of the default budget.
  const budgetProblem = defaultBudgetProblem(valid.deadline, replyReserveMs, mountDeadline)
  if (budgetProblem !== undefined) throw new GatewayConfigError([budgetProblem])
  // What deadline() below will refuse of the config's budgets (a maxMs under
  // its reserve's floor), refused here, before anything is opened: thrown
  // there, the metrics' listeners (and an own Redis client) were left behind.
  resolveIngressOptions({
    defaultMs: valid.deadline.defaultMs,
    maxMs: valid.deadline.maxMs,
    reserveMs: valid.deadline.reserveMs,
  })
  const firstTokenTimeoutMs = msOption(
    taker,
    'firstTokenTimeoutMs',
    options.firstTokenTimeoutMs,
    valid.policy.firstTokenTimeoutMs ?? 0,
  )
  const clock = options.clock ?? systemClock
  // A key or header value that is a name the gateway shows anyway is no secret (publishedNames).
  const published = publishedNames(valid)
  const secrets = [
    ...Object.values(valid.providers).flatMap((p) => p.apiKeys.filter((k) => !published.has(k))),
    ...secretHeaderValues(valid.providers, published),
    ...redisPassword(valid.redis?.url),
  ]
  const redact = redactSecrets(secrets)
  const { log: write, enabled: logEnabled } = createLog(
    options.logger,
    secrets,
    logLevelOption(taker, options.logLevel),
  )
  const log: GatewayContext['log'] = (level, event, fields = {}) => {
    // The id goes in where the record is built: no copy of `fields` to put it first.
    write(level, event, fields, currentRequest()?.id)
  }
  // llm's loggers: a failure at `warn`, its recovery ("available again") at `info`.
  const llmLogger = (source: string) => ({
    warn: (message: string) => log('warn', source, { message }),
    info: (message: string) => log('info', source, { message }),
  })

  const ownFetch =
    options.fetch === undefined
      ? createFetch({ headersTimeoutMs: 600_000, bodyTimeoutMs: 120_000 })
      : undefined
  const fetch = options.fetch ?? (ownFetch as HourglassFetch)
  // Before Redis is dialled: an adapter that refuses its options (a header
  // undici cannot send) is a config error, and nothing is left running.
  const adapters = createAdapters(valid, fetch)

  const ownRedis =
    options.redis === undefined && valid.redis !== undefined
      ? createRedisClient(valid.redis, log, clock)
      : undefined
  const redis = options.redis ?? ownRedis
  const prefix = valid.redis?.keyPrefix ?? 'hourglass:gateway'
  // What /readyz and redisState() say. Its probe (a script Redis treats as
  // a write, as the limit commands are) is bounded by
  // `commandTimeoutMs` (the budget after which a limit command falls back
  // anyway) and at most 500 ms: within the 1 s a Kubernetes probe waits by default.
  const health = new RedisHealth({
    redis,
    failing: () => limits.degraded || store?.failing === true,
    timeoutMs: Math.min(valid.redis?.commandTimeoutMs ?? 250, 500),
    // Under the prefixes the limits and the cooldowns write to, so an ACL
    // that refuses them refuses the probe too (one hash tag, one slot).
    probeKeys: [`${prefix}:limits:{hourglass-probe}`, `${prefix}:cooldown:{hourglass-probe}`],
  })
  const store =
    redis === undefined
      ? undefined
      : new TrackedCooldownStore(
          new RedisCooldownStore(redis, {
            keyPrefix: `${prefix}:cooldown:`,
            // The operator's bound on a Redis round trip, as the client made
            // here has it: the store's own default (1 s) cut a longer one short.
            ...(ownRedis === undefined || valid.redis === undefined
              ? {}
              : { commandTimeoutMs: valid.redis.commandTimeoutMs }),
          }),
          () => health.changed(),
          () => health.answered(),
        )
  const owner = {}
  const retiredKeys = new RetiredKeys(owner, valid.providers)
  const metrics = new GatewayMetrics(owner, clock, Object.keys(valid.providers), () =>
    retiredKeys.counts(),
  )
  // One admission layer: cooldowns per provider + base URL + key, then each
  // provider's RPM/TPM share (Redis-shared when configured, with a local
  // limiter as insurance), one wait and one rate-limited error for both.
  const limits = new ProviderLimits({
    limits: Object.fromEntries(
      Object.entries(valid.providers).map(([name, p]) => [name, p.limits ?? {}]),
    ),
    windowMs: valid.limits.windowMs,
    instances: valid.limits.instances,
    keyPrefix: `${prefix}:limits`,
    // After a failed count the limits stay local this long, then one request
    // asks Redis again. Not shorter than the command timeout of the client
    // made here: a second request would otherwise ask a frozen Redis while
    // the first still waits for its answer, one more per back-off, each
    // held for the whole timeout. (A client of the caller's: llm's 1 s.)
    ...(ownRedis === undefined || valid.redis === undefined
      ? {}
      : {
          redisBackoffMs: Math.max(1000, valid.redis.commandTimeoutMs),
          redisCommandTimeoutMs: valid.redis.commandTimeoutMs,
        }),
    // The back-off runs on the gateway's clock, as deadlines and cooldowns do.
    clock,
    // The limits say something only when they move between Redis and local:
    // what a probe found before that is old news.
    logger: {
      warn: (message: string) => {
        health.changed()
        log('warn', 'limits', { message })
      },
      info: (message: string) => {
        health.changed()
        log('info', 'limits', { message })
      },
    },
    onWait: (provider, limit, waitMs) => metrics.limitWait(provider, limit, waitMs),
    // Seen through the cooldowns' last command: a count right after a
    // cooldown read Redis left unanswered decides locally at once, instead
    // of waiting a second command timeout in the same request.
    ...(redis === undefined
      ? {}
      : { redis: new LimitsRedisClient(redis, () => store?.unanswered === true) }),
  })
  const admission = new WaitTimedAdmission(
    {
      clock,
      logger: llmLogger('admission'),
      limits,
      ...(store === undefined ? {} : { store }),
      // As the limits' back-off above, for the same reason: after a failed
      // cooldown read, calls decide on this process's view for this long, and
      // a frozen Redis holds one request for the command timeout per back-off,
      // not every request (250 ms added to each, by default).
      // The store wraps a RedisCooldownStore, bounded by its own
      // commandTimeoutMs: admission's default bound for a store of one's own
      // (1 s) would cut a longer configured one short.
      ...(store === undefined
        ? {}
        : {
            storeBackoffMs: Math.max(1000, valid.redis?.commandTimeoutMs ?? 0),
            storeTimeoutMs: Number.POSITIVE_INFINITY,
          }),
    },
    // A wait in progress ends with the acquire: recorded as long as it lasted.
    () => metrics.waitEnded(),
    replyReserveMs,
  )
  // Each provider's own prices: one model name may cost differently at two
  // providers, and merged by name the last one priced both — a fallback to
  // the dearer one was checked and charged at the cheaper price (12× under).
  const providerPrices: Record<string, Record<string, ModelPrice>> = {}
  for (const [name, p] of Object.entries(valid.providers)) providerPrices[name] = p.prices ?? {}
  const retryBudgets =
    options.retryBudgets === false ? undefined : (options.retryBudgets ?? new RetryBudgetRegistry())

  const ctx: GatewayContext = {
    config: valid,
    adapters,
    admission,
    retryBudgets,
    providerPrices,
    clock,
    replyReserveMs,
    firstTokenTimeoutMs,
    metrics,
    log,
    logEnabled,
    redact,
    keyWait: (provider, model) => {
      const adapter = adapters.get(targetKey({ provider, model }))
      if (adapter === undefined) return undefined
      // `limitedBy`: which limit holds the key (the one its 429 named), as a
      // refusal by cooldowns says it.
      const forecast = admission.forecast({
        provider: adapter.name,
        endpoint: adapter.baseURL,
        keys: adapter.apiKeys,
        model: adapter.model,
      })
      return {
        waitMs: forecast.waitMs,
        limitedBy: forecast.limitedBy,
        keys: adapter.apiKeys.length,
      }
    },
  }
  const tracker = new RequestTracker({
    owner,
    config: valid,
    clock,
    metrics,
    log,
    trustStainlessTimeout,
  })

  /** The `request` log line of a request no handler of ours ran for (refused ahead of it, or by the router's error handler). */
  const logAnswered = (req: Request, status: number, error: string | undefined) => {
    const scope = scopeOf(req)
    log(status >= 500 ? 'warn' : 'info', 'request', {
      ...(scope === undefined ? {} : { requestId: scope.id }),
      path: loggedPathOf(req),
      status,
      error,
      ...(scope === undefined ? {} : { latencyMs: Math.round(clock.now() - scope.startedAt) }),
    })
  }

  // Mounted in an app, the router sees the app's requests too: tracking,
  // deadline and drain are for the requests it answers (see isGatewayPath).
  // Applied to all, an app's own slow route after it got the gateway's 504
  // at deadline.defaultMs, and close() counted and cut the app's requests.
  const ours = (req: Request) => ownsEveryPath || isGatewayPath(routedPath(req), serveMetrics)
  const forOurs =
    (handler: RequestHandler): RequestHandler =>
    (req, res, next) => {
      if (ours(req)) handler(req, res, next)
      else next()
    }
  const router = express.Router()
  // Pipelined behind the last answer on its connection (a refusal that
  // closes it, a drain's): no answer of its would be sent, so none is
  // worked on — no upstream call, no count, nothing for a drain to wait on.
  // Its line says why its client got nothing: 499, the connection closed
  // under it. Its answer is ended, empty, though never sent: Node stops
  // reading a connection's pipelined requests only once the answers queued
  // on it hold a socket's high-water mark of unsent bytes. Left open, it
  // held none, and a client pipelining behind an answer still in flight was
  // read, parsed and logged without bound (each request's objects kept
  // until the connection closed). Its status is its line's, for what
  // watches answers end (OpenTelemetry's http instrumentation, which ends a
  // server span on the response's 'close': Node 20 and 22 never emit it for
  // a response still queued when its connection closes, so this one is
  // closed with the connection, as the tracker closes the others).
  router.use(
    forOurs((req, res, next) => {
      if (!behindLastAnswer(req.socket)) return next()
      req.resume()
      closeIfOrphaned(req, res)
      res.statusCode = 499
      res.end()
      log('info', 'request', {
        requestId: requestIdFrom(req.headers[REQUEST_ID_HEADER]),
        path: loggedPathOf(req),
        status: 499,
        error: 'client_closed',
        reason: 'behind_last_answer',
      })
    }),
  )
  router.use(forOurs(tracker.arrive()))
  if (mountDeadline) {
    router.use(
      forOurs(
        deadline({
          defaultMs: valid.deadline.defaultMs,
          maxMs: valid.deadline.maxMs,
          reserveMs: valid.deadline.reserveMs,
          clock,
          // Its 504s in OpenAI's error shape (`x-should-retry: false`, so the
          // official SDKs do not retry them): a budget spent on arrival, and
          // the backstop when the handler's own answer is late. Both stay
          // deadline()'s expiries, published as any app's are (stage
          // `arrival` or `handler`). Called on expiry only.
          respond: (req, res, error) => {
            // Its body still coming (a budget spent on arrival, or the
            // backstop beating the body read's own 504: `replyReserveMs: 0`,
            // a stalled loop), the connection is closed after this answer
            // (see RequestTracker, jsonBody): its head must say so. It said
            // keep-alive, and a pooling client sent its next request on a
            // connection about to end.
            if (bodyStillOwed(req)) closeAfterAnswer(res)
            sendError(ctx, res, error)
          },
          // Refused on arrival, the chain never runs: no handler writes the
          // request's log line. (A handler-stage expiry's handler still does.)
          onExpire: (event) => {
            if (event.stage !== 'arrival') return
            const req = event.req as Request
            logAnswered(req, req.res?.statusCode ?? 504, scopeOf(req)?.errorCode)
          },
        }),
      ),
    )
  }
  router.use(forOurs(tracker.scopeDeadline()))
  router.get('/healthz', healthz())
  router.get(
    '/readyz',
    readyz({
      draining: () => tracker.draining,
      redis: () => health.check(),
      known: () => health.state(),
      keysRetired: () => retiredKeys.exhausted(),
      clock,
      reserveMs: replyReserveMs,
    }),
  )
  if (serveMetrics) router.get('/metrics', (req, res) => metrics.serve(req, res))
  // Counted in /metrics and answered with an x-request-id, as every API
  // answer: so each has its request line too (a 404 `model_not_found` was
  // an error in the metrics that no log line explained).
  router.get('/v1/models', (req, res) => {
    sendJson(res, 200, { object: 'list', data: modelNames(valid).map(modelObject) })
    logAnswered(req, 200, undefined)
  })
  router.get('/v1/models/:id', retrieveModel(ctx, logAnswered))
  router.post(
    '/v1/chat/completions',
    jsonBody(maxBodyBytes, (req) => handlerDeadline(ctx, req), disposeHandlerDeadline),
    tracker.reenter(),
    chatCompletions(ctx),
  )
  // The gateway's paths asked with another method: 405 with `Allow`, not the 404 of a missing route.
  router.all('/v1/chat/completions', methodNotAllowed(['POST'], logAnswered))
  const getOnly = methodNotAllowed(['GET', 'HEAD'], logAnswered)
  for (const path of ['/v1/models', '/v1/models/:id', '/healthz', '/readyz']) {
    router.all(path, getOnly)
  }
  if (serveMetrics) router.all('/metrics', getOnly)
  router.use((error: unknown, req: Request, res: Response, next: NextFunction) => {
    // A body read, then refused before the handler (a drain): its deadline ends here.
    disposeHandlerDeadline(req)
    if (res.headersSent) {
      // Answered by the ingress backstop while the body was still coming
      // (its timer and the body read's both overdue after a stalled event
      // loop, the backstop's ran first): no handler of ours ran or will, so
      // the request's one log line is written here.
      logAnswered(req, res.statusCode, scopeOf(req)?.errorCode)
      return next(error)
    }
    const shaped = sendError(ctx, res, bodyError(error) ?? pathError(error) ?? error)
    logAnswered(req, shaped.status, shaped.body.error.code)
  })

  let closing: Promise<DrainReport> | undefined
  const shutDown = (logIt: boolean): Promise<DrainReport> => {
    closing ??= (async () => {
      // Said as the drain begins, not only when it ends: an operator watching
      // a rollout (a SIGTERM, a Ctrl-C) saw nothing for up to the drain
      // timeout, and could not tell a drain under way from a hung process.
      if (logIt) {
        log('info', 'draining', {
          message: `draining: requests in flight get up to ${drainTimeoutMs} ms to finish; new API requests get 503 shutting_down`,
          drainTimeoutMs,
        })
      }
      const report = await tracker.drain(drainTimeoutMs)
      if (logIt) {
        const cut = report.cutOff > 0 ? `, ${report.cutOff} cut off` : ''
        log(report.cutOff > 0 ? 'warn' : 'info', 'shutdown', {
          message: `shutdown: drained ${report.drained} in ${report.ms} ms${cut}`,
          ...report,
        })
      }
      await Promise.all([...ctx.adapters.values()].map((a) => a.close()))
      await ownFetch?.close()
      if (ownRedis) ownRedis.disconnect()
      await metrics.close()
      retiredKeys.close()
      return report
    })()
    return closing
  }
  const close = () => shutDown(true)
  const ready = async (timeoutMs = 2000, signal?: AbortSignal): Promise<boolean> => {
    const client = ownRedis
    if (client === undefined || client.status === 'ready') return true
    // Closed (the gateway's close()), or told to stop: it will not connect.
    if (signal?.aborted || client.status === 'end') return false
    // Not `events.once(client, 'ready')`: it rejects on the first 'error'
    // event, and ioredis emits one for every failed connection attempt, then
    // reconnects. A Redis still starting (refusing connections for its first
    // moments, as one started beside the gateway does) read as no Redis at
    // once: the gateway served on local limits instead of waiting the bound.
    let connected = false
    // Core's one wait: the bound, the caller's signal (a rejection: not
    // connected), or the client's 'ready' or 'end', whichever comes first;
    // its timer and both listeners released the moment it ends.
    await wait(timeoutMs, {
      signal,
      wakeOn: (wake) => {
        const onReady = () => {
          connected = true
          wake()
        }
        client.once('ready', onReady)
        client.once('end', wake)
        return () => {
          client.off('ready', onReady)
          client.off('end', wake)
        }
      },
    }).catch(() => {})
    return connected
  }
  const gateway = Object.assign(router, {
    config: valid,
    close,
    ready: (timeoutMs?: number) => ready(timeoutMs),
    redisState: () => health.state(),
    log,
    serveMetrics: (req: IncomingMessage, res: ServerResponse) => metrics.serve(req, res),
  }) as GatewayRouter
  startHooks.set(gateway, { closeSilently: () => shutDown(false), ready })
  return gateway
}

/** What `startGateway` needs of a gateway beyond its public face. */
interface StartHooks {
  closeSilently(): Promise<DrainReport>
  ready(timeoutMs: number | undefined, signal: AbortSignal): Promise<boolean>
}

const startHooks = new WeakMap<GatewayRouter, StartHooks>()

/** Closes a gateway that never served (its start failed) without a shutdown log line. @internal */
export function closeUnstarted(gateway: GatewayRouter): Promise<DrainReport> {
  return startHooks.get(gateway)?.closeSilently() ?? gateway.close()
}

/** `gateway.ready()` that also gives up (false) when `signal` aborts. @internal */
export function readyUnlessAborted(gateway: GatewayRouter, signal: AbortSignal): Promise<boolean> {
  return startHooks.get(gateway)?.ready(undefined, signal) ?? gateway.ready()
}

/**
 * A millisecond option: ≥ 0, or an error naming it now. A NaN (say
 * `Number(process.env.X)` with X unset) would otherwise fail every request
 * later, or — as `drainTimeoutMs` — cancel every request in flight at the
 * first SIGTERM instead of draining them.
 */
function msOption(
  taker: string,
  name: string,
  value: number | undefined,
  fallback: number,
): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !(value >= 0)) {
    throw optionError(taker, name, 'a number of ms ≥ 0', value)
  }
  return value
}

/**
 * The options that are objects, by shape. A bad `clock` used to be found by
 * `new Admission(…)`, after the gateway's own Redis client had started
 * dialling (left reconnecting for ever, the process never exiting), and with
 * no `code`; a `logger` or `env` of the wrong kind failed with a message that
 * named neither (`logger.child is not a function`, `Invalid value used as weak map key`).
 */
function checkObjectOptions(options: GatewayOptions, taker: string): void {
  const { clock, logger, env } = options
  if (clock !== undefined && !isClock(clock)) {
    throw optionError(taker, 'clock', 'a Clock (now, setTimeout, clearTimeout)', clock)
  }
  const pinoLike =
    typeof logger === 'object' &&
    logger !== null &&
    typeof (logger as { child?: unknown }).child === 'function' &&
    // What the gateway calls on it for every line (and on close): bunyan,
    // log4js or a hand-made object with `child()` passed, then every line
    // threw and `close()` rejected with "isLevelEnabled is not a function".
    typeof (logger as { isLevelEnabled?: unknown }).isLevelEnabled === 'function'
  if (logger !== undefined && typeof logger !== 'function' && !pinoLike) {
    throw optionError(taker, 'logger', 'a pino logger or a function receiving each record', logger)
  }
  if (env !== undefined && (typeof env !== 'object' || env === null)) {
    throw optionError(taker, 'env', 'a record of environment variables', env)
  }
  // Used on every request: `'off'`, `true` or `{}` started a gateway whose
  // every chat completion was a 500 internal_error naming nothing.
  const { retryBudgets } = options
  if (
    retryBudgets !== undefined &&
    retryBudgets !== false &&
    (typeof retryBudgets !== 'object' ||
      retryBudgets === null ||
      typeof (retryBudgets as { forProvider?: unknown }).forProvider !== 'function')
  ) {
    throw optionError(
      taker,
      'retryBudgets',
      'a RetryBudgetRegistry (new RetryBudgetRegistry()) or false',
      retryBudgets,
    )
  }
  // A URL string (its place is the config's `redis.url`) or an object
  // without the client's methods failed inside llm's cooldown store, with no
  // `code` and a name the caller never wrote; `null` dropped the config's
  // `redis.url` without a word (every limit counted on this instance alone);
  // one without `status` was never sent a command (anything but `ready` is
  // a connection down), so limits were local while /readyz said unreachable.
  const { redis } = options
  if (redis !== undefined && !isGatewayRedisClient(redis)) {
    throw optionError(
      taker,
      'redis',
      "an ioredis client, or an object of its shape (status, eval, evalsha); a URL goes in the config's redis.url",
      redis,
    )
  }
  // Checked by each adapter too, but reported there as a config problem of
  // the first provider (`providers.p: p adapter: …`): an operator was sent to
  // the config file for an option of the code's. `null` made a fetch of the
  // gateway's own defaults, as if left out.
  const { fetch } = options
  if (fetch !== undefined && typeof fetch?.dispatcher?.dispatch !== 'function') {
    throw optionError(
      taker,
      'fetch',
      'a createFetch() from @hourglass/fetch (the adapters send through its dispatcher)',
      fetch,
    )
  }
}

/**
 * A boolean option: true, false or left out. `metrics: 'false'` (read from
 * an environment variable) served `/metrics`, as anything but `false` did.
 */
function booleanOption(
  taker: string,
  name: string,
  value: boolean | undefined,
  fallback: boolean,
): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') {
    // A TypeError whatever the value: core's optionError makes a number a
    // RangeError (out of range), and 0 is not out of a boolean's range.
    const error = optionError(taker, name, 'true or false', value)
    throw error instanceof TypeError
      ? error
      : Object.assign(new TypeError(error.message), { code: error.code })
  }
  return value
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error']

function logLevelOption(taker: string, value: LogLevel | undefined): LogLevel {
  if (value === undefined) return 'info'
  if (!LOG_LEVELS.includes(value)) {
    throw optionError(taker, 'logLevel', `one of ${LOG_LEVELS.join(', ')}`, value)
  }
  return value
}

/**
 * A byte count: a whole number ≥ 1. body-parser reads 0, a negative or a
 * fraction as a limit no body fits (every request a 413), and NaN as an
 * error of its own that names no option.
 */
function bytesOption(
  taker: string,
  name: string,
  value: number | undefined,
  fallback: number,
): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw optionError(taker, name, 'a whole number of bytes ≥ 1', value)
  }
  return value
}

/**
 * The path the router matches its routes against: Express's `req.path`
 * (parseurl: no query, no `#…`), whole — not `pathOf`, cut at 256
 * characters for log lines (a long app path under `/v1/models/` cut to
 * `/v1/models/aaa…` read as the gateway's). Outside an Express app, the
 * target up to its query or fragment.
 */
function routedPath(req: Request): string {
  const path = (req as { path?: unknown }).path
  if (typeof path === 'string') return path
  const url = req.url ?? '/'
  const end = url.search(/[?#]/)
  return end === -1 ? url : url.slice(0, end)
}
