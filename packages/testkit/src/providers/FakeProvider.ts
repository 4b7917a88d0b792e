import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  type Clock,
  isClock,
  messageOf,
  refuseUnknownOptions,
  systemClock,
  untilEnded,
} from '@hourglass/core'
import { checkReplyFields } from './checkReplyFields.js'
import { checkUsage } from './checkUsage.js'
import { defaultRateLimitReply } from './defaultRateLimitReply.js'
import { modelList } from './modelList.js'
import { apiKeyOf, routeRequest } from './routeRequest.js'
import type {
  ProviderDialect,
  ProviderReply,
  RecordedRequest,
  ReplyScript,
  TextReply,
} from './types.js'
import { unknownRouteReply } from './unknownRouteReply.js'
import { writeReply } from './writeReply.js'

export interface FakeProviderOptions {
  /** Whose quirks to speak where formats overlap, and the default `baseURL`. Default `'openai'`. */
  dialect?: ProviderDialect | undefined
  /** The reply when the queue is empty. Default: a short text answer. */
  reply?: ReplyScript | undefined
  /** Model ids listed by `GET …/models` (in the shape of the API asked). Default `['fake-model']`. */
  models?: string[] | undefined
  /** Drives delays, rate-limit windows and `receivedAtMs`. Default: the system clock. */
  clock?: Clock | undefined
  /**
   * Cut answers at the request's token cap and stop sequences, as the real
   * APIs do (`max_tokens`, `max_completion_tokens`, `stop`,
   * `stop_sequences`, `generationConfig.maxOutputTokens` / `.stopSequences`).
   * Default false: the scripted answer is sent whole, whatever the request
   * allows (tests written before it script answers longer than the caps
   * they send).
   */
  honourOutputLimits?: boolean | undefined
}

const BASE_PATHS: Record<ProviderDialect, string> = {
  openai: '/v1',
  anthropic: '',
  gemini: '/v1beta',
  deepseek: '',
  qwen: '/compatible-mode/v1',
  ernie: '/v2',
  doubao: '/api/v3',
}

/**
 * A fake LLM provider on a real loopback port, speaking the real wire
 * formats (see docs/providers.md). Script it per request; read back what it
 * received. Start with `startFakeProvider`; `close()` ends every connection.
 */
export class FakeProvider {
  readonly dialect: ProviderDialect
  /** `http://127.0.0.1:<port>`. */
  readonly url: string
  /** What an SDK's `baseURL` should be for this dialect (`${url}/v1` for OpenAI, `url` for Anthropic, …). */
  readonly baseURL: string
  readonly #server: Server
  readonly #clock: Clock
  /**
   * Wall time when the fake's clock read 0: the clock is monotonic (or
   * manual), and wall-clock headers (Anthropic's RFC 3339 resets) are this
   * plus `clock.now()` — so advancing a `ManualClock` moves them too.
   */
  readonly #wallAnchorMs: number
  readonly #models: string[]
  readonly #honourOutputLimits: boolean
  readonly #queue: ReplyScript[] = []
  readonly #windows: { untilMs: number; reply: ProviderReply }[] = []
  readonly #records: RecordedRequest[] = []
  readonly #inFlight = new Set<AbortController>()
  readonly #waiters: { count: number; resolve: () => void }[] = []
  /** The reply the fake started with (its `reply` option, else the built-in text): what `reset()` goes back to. */
  readonly #startReply: ReplyScript
  #default: ReplyScript

  private constructor(server: Server, options: FakeProviderOptions) {
    this.#server = server
    this.dialect = options.dialect ?? 'openai'
    this.#clock = options.clock ?? systemClock
    this.#wallAnchorMs = Date.now() - this.#clock.now()
    this.#models = options.models ?? ['fake-model']
    this.#honourOutputLimits = options.honourOutputLimits ?? false
    this.#startReply = options.reply ?? { kind: 'text', text: 'Hello from the fake provider.' }
    this.#default = this.#startReply
    const { port } = server.address() as AddressInfo
    this.url = `http://127.0.0.1:${port}`
    this.baseURL = this.url + BASE_PATHS[this.dialect]
  }

  /** @internal use `startFakeProvider`. */
  static async start(options: FakeProviderOptions = {}): Promise<FakeProvider> {
    // Before the port is opened: a bad option is a TypeError naming it, not a
    // baseURL ending in `undefined` or a connection reset on the first request.
    checkOptions(options)
    let fake: FakeProvider | undefined
    const server = createServer((req, res) => {
      if (fake === undefined) res.destroy()
      else fake.#handle(req, res).catch(() => res.destroy())
    })
    // Keep connections alive like a real provider does. Under undici's 2 s
    // keep-alive threshold (a 1 s timeout, as before) every client closed its
    // connection after each response and opened a new one for the next.
    server.keepAliveTimeout = 5000
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    fake = new FakeProvider(server, options)
    return fake
  }

  /** Replies for the next requests, in order; each is used once. */
  enqueue(...replies: ReplyScript[]): this {
    for (const script of replies) checkScript('enqueue', script)
    this.#queue.push(...replies)
    return this
  }

  /** The reply (or function choosing one) when the queue is empty, until `reset()`. */
  setReply(script: ReplyScript): this {
    checkScript('setReply', script)
    this.#default = script
    return this
  }

  /**
   * For the next `forMs` ms, answer every request with `reply` (default: this
   * dialect's rate-limit error — OpenAI's and Anthropic's with `retry-after`
   * = the window in whole seconds, rounded up, Gemini's with it in its body,
   * the others' naming no wait) without touching the queue.
   */
  rateLimit(options: { forMs: number; reply?: ProviderReply | undefined }): this {
    // Else `forMS` (or a string) made a window ending at NaN: never open, nothing limited.
    refuseUnknownOptions(options, RATE_LIMIT_OPTION_NAMES, 'FakeProvider.rateLimit()')
    const { forMs, reply } = options
    if (typeof forMs !== 'number' || !(forMs >= 0)) {
      throw new TypeError(
        `FakeProvider.rateLimit: forMs must be a number of ms ≥ 0, got ${String(forMs)}`,
      )
    }
    if (reply !== undefined) {
      // The window answers with the reply itself: a function would not be called.
      if (typeof reply === 'function') {
        throw new TypeError(
          'FakeProvider.rateLimit: reply must be reply.text(), reply.error() or reply.hang(), got a function',
        )
      }
      checkScript('rateLimit', reply)
    }
    this.#windows.push({
      untilMs: this.#clock.now() + options.forMs,
      reply: options.reply ?? defaultRateLimitReply(this.dialect, options.forMs),
    })
    return this
  }

  /** Every request received, in arrival order. */
  get requests(): readonly RecordedRequest[] {
    return this.#records
  }

  /**
   * Requests that reached generation: succeeded, wrote tokens before ending,
   * or ended in a malformed function call (Gemini's). What a real provider bills.
   */
  get paidGenerations(): number {
    return this.#records.filter((r) => r.paid).length
  }

  /** Scripted replies not yet used. */
  get queuedReplies(): number {
    return this.#queue.length
  }

  /**
   * Resolves once `count` requests in all have arrived and been read (at
   * once if they already have) — before the reply is chosen and paced: on a
   * ManualClock, a function script's or a stream's first timer comes later
   * (docs/providers.md says how to wait for it). Not moved to that timer:
   * a hang, or a stream stalled on a client that reads nothing, never sets
   * one, and a script may be waiting on the test itself.
   */
  waitForRequests(count: number): Promise<void> {
    if (this.#records.length >= count) return Promise.resolve()
    return new Promise((resolve) => this.#waiters.push({ count, resolve }))
  }

  /**
   * Forget records, queue, rate-limit windows and a `setReply` reply: the
   * fake answers as it did when it started (its `reply` option, else the
   * built-in text). A test's `setReply(openAIErrors.serverError())` kept
   * answering every later test of the file with 500s after
   * `afterEach(() => fake.reset())`, though its queue was forgotten.
   */
  reset(): void {
    this.#default = this.#startReply
    this.#queue.length = 0
    this.#windows.length = 0
    this.#records.length = 0
  }

  /** Replies still being written: 0 once every client got its answer or went away (a leak check). */
  get inFlight(): number {
    return this.#inFlight.size
  }

  /** Stops listening and ends every open connection, hung ones included. */
  async close(): Promise<void> {
    for (const controller of this.#inFlight) controller.abort()
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()))
    this.#server.closeAllConnections()
    await closed
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const controller = new AbortController()
    this.#inFlight.add(controller)
    const record = this.#recordStart(req)
    const onClose = () => {
      if (record.outcome === 'pending') record.outcome = 'client-closed'
      controller.abort()
    }
    res.on('close', onClose)
    try {
      const rawBody = await readBody(req)
      record.rawBody = rawBody
      try {
        record.body = rawBody === '' ? undefined : JSON.parse(rawBody)
      } catch {
        record.body = undefined
      }
      const route = routeRequest(record.method, record.path, record.query, record.body)
      record.route = route.route
      record.model = route.model
      record.stream = route.stream
      this.#publish(record)
      if (route.route === 'models') {
        const list = JSON.stringify(modelList(this.dialect, record, this.#models))
        record.outcome = 'success'
        res.writeHead(200, { 'content-type': 'application/json' }).end(list)
        return
      }
      // A path no API answers is the provider's 404, whatever is scripted
      // (as is a Gemini model name that cannot exist): neither the queue nor
      // a rate-limit window is used for it.
      const unknown =
        route.wire === undefined
          ? (route.refusal ?? unknownRouteReply(this.dialect, record.method, record.path))
          : undefined
      const window = this.#windows.find((w) => this.#clock.now() < w.untilMs)
      let reply: ProviderReply
      if (unknown !== undefined) {
        reply = unknown
      } else if (window !== undefined) {
        record.reply = 'rate-limit'
        reply = window.reply
      } else {
        const script = this.#queue.shift() ?? this.#default
        if (typeof script === 'function') {
          // The client left (or the fake closed) while the script was
          // choosing: nobody is there to answer. A script held on a promise
          // the test settles later (a gate) kept its request in `inFlight`
          // after its client had let go, and after `close()`: a leak check
          // failed. Its later reply (or rejection) is dropped.
          const chosen = await untilEnded(Promise.resolve(script(record)), {
            signal: controller.signal,
          }).catch((error: unknown): typeof GONE => {
            if (controller.signal.aborted) return GONE
            throw error
          })
          if (chosen === GONE) return
          reply = chosen
        } else {
          reply = script
        }
        // `?.`: a script function may return nothing; writeReply answers that with a 500.
        record.reply = (reply as ProviderReply | undefined)?.kind
      }
      await writeReply(
        {
          res,
          record,
          wire: route.wire,
          dialect: this.dialect,
          clock: this.#clock,
          honourOutputLimits: this.#honourOutputLimits,
          wallNowMs: () => this.#wallAnchorMs + this.#clock.now(),
          signal: controller.signal,
        },
        reply,
      )
    } catch (error) {
      // A reply script's exception, or the fake's own. It was said nowhere:
      // the connection was destroyed and read as a provider that dropped it
      // for no reason (a long Anthropic answer once hid a stack overflow so).
      // Before anything was written it is a 500 naming it, as a script that
      // returns no reply gets; after, the connection is cut (the server's
      // catch). The record keeps the exception either way.
      // The client leaving mid-upload is its doing, not a failure of ours.
      if (record.outcome === 'client-closed') throw error
      record.failure = error
      if (res.headersSent || res.destroyed) {
        if (record.outcome === 'pending') record.outcome = 'cut'
        throw error
      }
      record.outcome = 'error'
      res.writeHead(500, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: {
            // messageOf, not String(): a script may throw anything, and String()
            // of an object with no prototype or a revoked Proxy threw here,
            // after writeHead — the client saw a reset, not this 500.
            message: `the fake provider failed while answering: ${messageOf(error).slice(0, 500)}`,
            type: 'fake_provider_script_error',
            code: 'reply_failed',
          },
        }),
      )
    } finally {
      // Let go by `close()` before its socket closed (a script still
      // choosing, a reply in its latency): its 'close' listener goes here,
      // before the socket's close could say so, and the record said
      // `pending` for good. As a connection `close()` drops says it.
      if (controller.signal.aborted && record.outcome === 'pending') {
        record.outcome = 'client-closed'
      }
      res.off('close', onClose)
      this.#inFlight.delete(controller)
    }
  }

  /** Records are published once the body is read and routed, so tests see them complete. */
  #publish(record: RecordedRequest): void {
    record.index = this.#records.length
    this.#records.push(record)
    for (const waiter of [...this.#waiters]) {
      if (this.#records.length >= waiter.count) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1)
        waiter.resolve()
      }
    }
  }

  #recordStart(req: IncomingMessage): RecordedRequest {
    // The request target read as a path, as the client sent it: resolved as
    // a relative URL, `//v1/messages` (a base URL's trailing slash joined to
    // `/v1/messages`) named the host `v1`, and the record said `/messages`.
    const target = req.url ?? '/'
    const url = new URL(target.startsWith('/') ? `http://fake${target}` : target, 'http://fake')
    const query = Object.fromEntries(url.searchParams)
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value
    }
    const record: RecordedRequest = {
      index: -1,
      receivedAtMs: this.#clock.now(),
      method: req.method ?? 'GET',
      path: url.pathname,
      query,
      headers,
      body: undefined,
      rawBody: '',
      apiKey: apiKeyOf(headers, query),
      route: 'unknown',
      model: undefined,
      stream: false,
      reply: undefined,
      outcome: 'pending',
      tokensSent: 0,
      paid: false,
    }
    return record
  }
}

const REPLY_KINDS: ReadonlySet<unknown> = new Set(['text', 'error', 'hang'])

/** A reply (`reply.text`, `reply.error`, `reply.hang`) or a function choosing one per request. */
function checkScript(where: string, script: unknown): void {
  if (typeof script === 'function') return
  const kind =
    typeof script === 'object' && script !== null ? (script as { kind?: unknown }).kind : undefined
  if (REPLY_KINDS.has(kind)) {
    // A text reply written by hand, not through reply.text().
    if (kind === 'text') checkUsage(`FakeProvider.${where}`, (script as TextReply).usage)
    checkReplyFields(`FakeProvider.${where}`, script as object)
    return
  }
  throw new TypeError(
    `FakeProvider.${where}: a reply must be reply.text(), reply.error(), reply.hang() or a function returning one, got ${kind === undefined ? String(script) : `kind ${String(kind)}`}`,
  )
}

const RATE_LIMIT_OPTION_NAMES = ['forMs', 'reply']

const OPTION_NAMES = Object.keys({
  dialect: true,
  reply: true,
  models: true,
  clock: true,
  honourOutputLimits: true,
} satisfies Record<keyof FakeProviderOptions, true>)

function checkOptions(options: FakeProviderOptions): void {
  // Ignored, a misspelt `dialect` left the fake speaking OpenAI's wire format.
  refuseUnknownOptions(options, OPTION_NAMES, 'startFakeProvider()')
  const { dialect, models, clock, reply, honourOutputLimits } = options
  if (dialect !== undefined && !Object.hasOwn(BASE_PATHS, dialect)) {
    throw new TypeError(
      `startFakeProvider: dialect must be one of ${Object.keys(BASE_PATHS).join(', ')}, got ${String(dialect)}`,
    )
  }
  if (
    models !== undefined &&
    (!Array.isArray(models) || !models.every((m) => typeof m === 'string'))
  ) {
    throw new TypeError(
      `startFakeProvider: models must be an array of model ids, got ${String(models)}`,
    )
  }
  if (clock !== undefined && !isClock(clock)) {
    throw new TypeError(
      'startFakeProvider: clock must be a Clock (now, setTimeout and clearTimeout functions)',
    )
  }
  if (honourOutputLimits !== undefined && typeof honourOutputLimits !== 'boolean') {
    throw new TypeError(
      `startFakeProvider: honourOutputLimits must be a boolean, got ${String(honourOutputLimits)}`,
    )
  }
  if (reply !== undefined) checkScript('reply', reply)
}

/** Starts a fake provider on 127.0.0.1, port 0. Close it after the test. */
export function startFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  return FakeProvider.start(options)
}

const GONE = Symbol('gone')

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}
