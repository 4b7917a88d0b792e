import { once } from 'node:events'
import { type Clock, systemClock } from '@hourglass/core'
import { deadline } from '@hourglass/express'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import express, { type NextFunction, type Request, type Response, type Router } from 'express'
import { Redis } from 'ioredis'
import { createAdapters } from './call/createAdapters.js'
import type { GatewayConfig } from './config/gatewayConfigSchema.js'
import { parseGatewayConfig } from './config/parseGatewayConfig.js'
import type { GatewayContext } from './GatewayContext.js'
import { chatCompletions } from './http/chatCompletions.js'
import { GatewayRequestError } from './http/GatewayRequestError.js'
import { sendError } from './http/sendError.js'
import { ProviderLimits } from './limits/index.js'
import { Admission, type ModelPrice, RedisCooldownStore, RetryBudgetRegistry } from './llm.js'
import { type GatewayLogger, stderrJsonLogger } from './log/GatewayLogger.js'
import { redactSecrets } from './log/redactSecrets.js'
import { modelNames } from './routing/resolveModel.js'

export interface GatewayOptions {
  /** Where log records go. Default: JSON lines on stderr. Keys are scrubbed before it sees anything. */
  logger?: GatewayLogger | undefined
  /** Mount @hourglass/express's `deadline()` inside the router. Default true; false when your app mounts it. */
  mountDeadline?: boolean | undefined
  /**
   * Time kept back to write an OpenAI-shaped 504 (or a stream's error event)
   * before the request's deadline, in ms. Default 25; 0 = the ingress
   * middleware's plain 504 answers instead.
   */
  replyReserveMs?: number | undefined
  /** Streams: longest wait for the first token per attempt, in ms, before it counts as a timeout. Default 0 = the deadline only. */
  firstTokenTimeoutMs?: number | undefined
  /** Largest request body, in bytes. Default 4 MiB. */
  maxBodyBytes?: number | undefined
  /** Shares cooldowns and limits through this client instead of one made from `config.redis.url`. */
  redis?: Redis | undefined
  /** Per-provider retry budgets (gRPC retry throttling). Default: one registry with llm's defaults; `false` = none. */
  retryBudgets?: RetryBudgetRegistry | false | undefined
  /** The fetch every adapter sends with. Default: one `createFetch` with generous header/body timeouts. */
  fetch?: HourglassFetch | undefined
  /** Time source for deadlines and admission (tests). Default the system clock. */
  clock?: Clock | undefined
  /** Where `{ "env": NAME }` keys resolve when `config` is not validated yet. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>> | undefined
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
  /** Closes upstream connections and a Redis client the gateway created itself. */
  close(): Promise<void>
}

/**
 * One OpenAI-compatible endpoint over every configured provider:
 * `POST /v1/chat/completions` (streamed or not), `GET /v1/models`,
 * `GET /healthz`. Mount it with `app.use(createGateway(config))`.
 * The config is validated here (a `GatewayConfigError` names each bad
 * field), so a typo fails at start, not on the first request.
 */
export function createGateway(config: unknown, options: GatewayOptions = {}): GatewayRouter {
  const valid = parseGatewayConfig(config, { env: options.env })
  const clock = options.clock ?? systemClock
  const secrets = Object.values(valid.providers).flatMap((p) => [
    ...p.apiKeys,
    ...Object.values(p.headers ?? {}),
  ])
  const redact = redactSecrets(secrets)
  const logger = options.logger ?? stderrJsonLogger
  const log: GatewayContext['log'] = (level, event, fields = {}) => {
    try {
      logger(redact({ level, event, ...fields }))
    } catch {
      // A logger must not take a request down.
    }
  }
  const warn = (source: string) => ({ warn: (message: string) => log('warn', source, { message }) })

  const ownRedis =
    options.redis === undefined && valid.redis !== undefined
      ? new Redis(valid.redis.url, {
          lazyConnect: false,
          // Limits and cooldowns must answer now or fall back to local state:
          // no queueing while disconnected, no resending after a reconnect (a
          // resent INCR would count a request twice), and a hung Redis is cut
          // off after commandTimeoutMs.
          enableOfflineQueue: false,
          autoResendUnfulfilledCommands: false,
          commandTimeout: valid.redis.commandTimeoutMs,
        })
      : undefined
  const redis = options.redis ?? ownRedis
  // ioredis reports connection errors as events; without a listener they would crash the process.
  ownRedis?.on('error', () => {})
  const prefix = valid.redis?.keyPrefix ?? 'hourglass:gateway'
  const admission = new Admission({
    clock,
    logger: warn('admission'),
    ...(redis === undefined
      ? {}
      : { store: new RedisCooldownStore(redis, { keyPrefix: `${prefix}:cooldown:` }) }),
  })
  const limits = new ProviderLimits({
    limits: Object.fromEntries(
      Object.entries(valid.providers).map(([name, p]) => [name, p.limits ?? {}]),
    ),
    windowMs: valid.limits.windowMs,
    instances: valid.limits.instances,
    keyPrefix: `${prefix}:limits`,
    logger: warn('limits'),
    ...(redis === undefined ? {} : { redis }),
  })
  const ownFetch =
    options.fetch === undefined
      ? createFetch({ headersTimeoutMs: 600_000, bodyTimeoutMs: 120_000 })
      : undefined
  const fetch = options.fetch ?? (ownFetch as HourglassFetch)
  const prices: Record<string, ModelPrice> = {}
  for (const p of Object.values(valid.providers)) Object.assign(prices, p.prices ?? {})

  const ctx: GatewayContext = {
    config: valid,
    adapters: createAdapters(valid, fetch, limits, (provider) => admission.neededMs(provider)),
    admission,
    retryBudgets:
      options.retryBudgets === false
        ? undefined
        : (options.retryBudgets ?? new RetryBudgetRegistry()),
    prices,
    clock,
    replyReserveMs: Math.max(0, options.replyReserveMs ?? 25),
    firstTokenTimeoutMs: Math.max(0, options.firstTokenTimeoutMs ?? 0),
    log,
    redact,
  }

  const router = express.Router()
  if (options.mountDeadline !== false) {
    router.use(
      deadline({
        defaultMs: valid.deadline.defaultMs,
        maxMs: valid.deadline.maxMs,
        reserveMs: valid.deadline.reserveMs,
        clock,
      }),
    )
  }
  router.get('/healthz', (_req, res) => {
    res.setHeader('cache-control', 'no-store')
    res.json({
      status: 'ok',
      limits: redis === undefined ? 'memory' : limits.degraded ? 'local' : 'shared',
    })
  })
  router.get('/v1/models', (_req, res) => {
    res.json({
      object: 'list',
      data: modelNames(valid).map((id) => ({
        id,
        object: 'model',
        created: 0,
        owned_by: 'hourglass',
      })),
    })
  })
  router.post(
    '/v1/chat/completions',
    express.json({ limit: options.maxBodyBytes ?? 4 * 1024 * 1024 }),
    chatCompletions(ctx),
  )
  router.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error)
    sendError(ctx, res, bodyError(error) ?? error)
  })

  const close = async () => {
    await Promise.all([...ctx.adapters.values()].map((a) => a.close()))
    await ownFetch?.close()
    if (ownRedis) ownRedis.disconnect()
  }
  const ready = async (timeoutMs = 2000): Promise<boolean> => {
    if (ownRedis === undefined || ownRedis.status === 'ready') return true
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), timeoutMs)
    try {
      await once(ownRedis, 'ready', { signal: controller.signal })
      return true
    } catch {
      return false
    } finally {
      clearTimeout(timer)
    }
  }
  return Object.assign(router, { config: valid, close, ready }) as GatewayRouter
}

/** body-parser's errors (bad JSON, too large) → what the client should fix. */
function bodyError(error: unknown): GatewayRequestError | undefined {
  const type = (error as { type?: unknown } | null)?.type
  if (type === 'entity.parse.failed') {
    return new GatewayRequestError({
      status: 400,
      errorCode: 'invalid_json',
      message: 'the body is not valid JSON',
    })
  }
  if (type === 'entity.too.large') {
    return new GatewayRequestError({
      status: 413,
      errorCode: 'request_too_large',
      message: 'the body is too large',
    })
  }
  if (
    (typeof type === 'string' && type.startsWith('encoding.')) ||
    type === 'charset.unsupported'
  ) {
    return new GatewayRequestError({
      status: 415,
      errorCode: 'unsupported_encoding',
      message: 'the body encoding is not supported',
    })
  }
  return undefined
}
