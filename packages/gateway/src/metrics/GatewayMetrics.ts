import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ChannelMessage, Clock } from '@hourglass/core'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { leftByClient } from '../call/leftByClient.js'
import { currentRequest, type RequestScope } from '../http/requestScope.js'
import type { RetiredCount } from '../limits/RetiredKeys.js'
import { llmChannels } from '../llm.js'

const SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
const WAIT_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/**
 * One gateway's metrics, served at `/metrics` in Prometheus text format by
 * OpenTelemetry's Prometheus exporter (its request handler on the gateway's
 * router: no second port). Its own MeterProvider, so nothing global is
 * touched and two gateways in one process count apart: events from llm's
 * channels are counted only when they belong to a request of this gateway
 * (read from the request scope the event is published in). Keys appear only
 * as llm's `keyId` (a short non-reversible hash), durations in seconds.
 */
export class GatewayMetrics {
  readonly #owner: object
  readonly #clock: Clock
  readonly #exporter: PrometheusExporter
  readonly #provider: MeterProvider
  readonly #requests
  readonly #duration
  readonly #errors
  readonly #expiries
  readonly #attempts
  readonly #fallbacks
  readonly #tokens
  readonly #cooldowns
  readonly #waits
  readonly #waitDuration
  readonly #ttft
  readonly #clientRetries
  readonly #unsubscribe: () => void
  #closed = false

  /**
   * `providers`: the config's provider names, whose series start at 0 (see
   * `#fromZero`); `retiredKeys`: what the retired-keys gauge reads at each scrape.
   */
  constructor(
    owner: object,
    clock: Clock,
    providers: readonly string[],
    retiredKeys: () => readonly RetiredCount[] = () => [],
  ) {
    this.#owner = owner
    this.#clock = clock
    this.#exporter = new PrometheusExporter({
      preventServerStart: true,
      withoutScopeInfo: true,
      withoutTargetInfo: true,
    })
    this.#provider = new MeterProvider({ readers: [this.#exporter] })
    const meter = this.#provider.getMeter('@hourglass/gateway')
    this.#requests = meter.createCounter('hourglass.gateway.requests', {
      description: 'API requests ended, by status class (499, the client left first, is a 4xx)',
      unit: '{request}',
    })
    this.#duration = meter.createHistogram('hourglass.gateway.request.duration.seconds', {
      description: 'Time from arrival to the end of the response',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS },
    })
    this.#errors = meter.createCounter('hourglass.gateway.errors', {
      description: 'Requests answered with an error, by its OpenAI error code',
      unit: '{request}',
    })
    this.#expiries = meter.createCounter('hourglass.gateway.deadline.expiries', {
      description: 'Requests whose deadline ran out (504, or a stream ended by it)',
      unit: '{request}',
    })
    this.#attempts = meter.createCounter('hourglass.gateway.upstream.attempts', {
      description: 'Attempts sent to providers, by what the policy decided after each',
      unit: '{attempt}',
    })
    this.#fallbacks = meter.createCounter('hourglass.gateway.fallbacks', {
      description:
        'Calls that left a provider for the next one of the fallback list: after an attempt, or skipped by admission with nothing sent (at its RPM/TPM limit, or cooling)',
      unit: '{fallback}',
    })
    this.#tokens = meter.createCounter('hourglass.gateway.tokens', {
      description: 'Tokens the providers reported, input and output',
      unit: '{token}',
    })
    this.#cooldowns = meter.createCounter('hourglass.gateway.cooldowns', {
      description: 'Cooldowns started per provider and key id (rate limit, overload, rejected key)',
      unit: '{cooldown}',
    })
    this.#waits = meter.createCounter('hourglass.gateway.waits', {
      description: 'Waits before sending: a key cooling down, or an RPM/TPM window',
      unit: '{wait}',
    })
    this.#waitDuration = meter.createHistogram('hourglass.gateway.wait.duration.seconds', {
      description: 'Length of those waits',
      unit: 's',
      advice: { explicitBucketBoundaries: WAIT_SECONDS },
    })
    this.#ttft = meter.createHistogram('hourglass.gateway.time_to_first_token.seconds', {
      description: 'Streams: time from arrival to the first token written',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS },
    })
    this.#clientRetries = meter.createCounter('hourglass.gateway.client_retries', {
      description:
        'Requests an SDK marked as its retry (X-Stainless-Retry-Count > 0), by whether the retry budget let them through',
      unit: '{request}',
    })

    // A gauge, read at each scrape: a retirement lasts until restart, so
    // an alert on `retired_keys > 0` holds while it does, where a counter's
    // `increase()` would fall back to 0 once its window passed the 401.
    meter
      .createObservableGauge('hourglass.gateway.retired_keys', {
        description:
          'Keys retired until restart (rejected, or their quota gone for good), per provider: for every model (scope key), or for one model (scope model)',
        unit: '{key}',
      })
      .addCallback((result) => {
        for (const { provider, scope, model, count } of retiredKeys()) {
          result.observe(count, { provider, scope, ...(model === undefined ? {} : { model }) })
        }
      })

    this.#fromZero(providers)

    const onAttempt = (m: ChannelMessage<typeof llmChannels.attempt>) => {
      if (!this.#mine()) return
      // Never sent (llm's `sent: false`: the HTTP client refused it at once,
      // the adapter was closed): no provider saw it, and counted as one of
      // its attempts it read as that provider failing. The call still left
      // the provider, so a fallback after it counts below.
      if (m.sent !== false) this.#attempts.add(1, attemptAttributes(m))
      if (m.decision === 'fallback') this.#fallbacks.add(1, { provider: m.provider })
      if (m.inputTokens) this.#tokens.add(m.inputTokens, { provider: m.provider, type: 'input' })
      if (m.outputTokens) this.#tokens.add(m.outputTokens, { provider: m.provider, type: 'output' })
    }
    const onCooldown = (m: ChannelMessage<typeof llmChannels.cooldown>) => {
      if (m.state !== 'start' || !this.#mine()) return
      // Another instance's cooldown, read from the shared store: counted
      // where it started (that instance's attempt met the limit). Counted
      // here too, one 429 was as many cooldowns as instances on the Redis.
      if (m.learned === true) return
      // scope: what it holds back (one model on the key, the key, or every
      // key of the provider, whose key_id is then `*`).
      this.#cooldowns.add(1, { provider: m.provider, key_id: m.keyId, scope: m.scope ?? 'key' })
    }
    const onAdmission = (m: ChannelMessage<typeof llmChannels.admission>) => {
      // Admission decides anew: a wait of this request's before it is over.
      this.waitEnded()
      if (m.action === 'fallback') {
        // Left without sending: the provider was at its RPM/TPM limit or
        // cooling past what the deadline (or the next model) allows. Never
        // counted twice: llm publishes this only when admission refuses, in
        // which case no attempt is made (so no attempt record says
        // 'fallback' for this leaving); an attempt's 'fallback' hands over
        // straight away, with no admission after it on that model.
        if (this.#mine()) this.#fallbacks.add(1, { provider: m.provider })
        return
      }
      // RPM/TPM waits are counted by the limits' own hook (limitWait), per limit.
      if (m.action !== 'wait' || m.cause !== 'cooldown' || !this.#mine()) return
      this.#waitStarted({ provider: m.provider, key_id: m.keyId, reason: 'cooldown' }, m.waitMs)
    }
    llmChannels.attempt.subscribe(onAttempt)
    llmChannels.cooldown.subscribe(onCooldown)
    llmChannels.admission.subscribe(onAdmission)
    this.#unsubscribe = () => {
      llmChannels.attempt.unsubscribe(onAttempt)
      llmChannels.cooldown.unsubscribe(onCooldown)
      llmChannels.admission.unsubscribe(onAdmission)
    }
  }

  /**
   * Serves the current values in Prometheus text format; 503 once closed
   * (the router may still be mounted after `close()`): the exporter would
   * answer 200 with an error comment, which a scraper stores as an empty,
   * healthy page instead of a target that is gone.
   */
  serve(req: IncomingMessage, res: ServerResponse): void {
    if (this.#closed) {
      res.statusCode = 503
      res.setHeader('content-type', 'text/plain; charset=utf-8')
      res.setHeader('cache-control', 'no-store')
      res.end('# the gateway is closed: no metrics\n')
      return
    }
    // Never cached, as /healthz and /readyz: a proxy between the scraper and
    // the gateway must not serve an old page (counters that seem to stand still).
    res.setHeader('cache-control', 'no-store')
    this.#exporter.getMetricsRequestHandler(req, res)
  }

  /** A request ended: `status` 499 when the client left first; `errorCode` as the client was (or would have been) told. */
  request(status: number, errorCode: string | undefined, durationMs: number): void {
    const statusClass = `${Math.floor(status / 100)}xx`
    this.#requests.add(1, { status_class: statusClass })
    this.#duration.record(Math.max(0, durationMs) / 1000, { status_class: statusClass })
    if (errorCode !== undefined) this.#errors.add(1, { kind: errorCode })
    if (errorCode === 'deadline_exceeded') this.#expiries.add(1)
  }

  /** A stream's first token (not its first event: a finish alone has none) was written `ms` after the request arrived. */
  timeToFirstToken(model: string, ms: number): void {
    this.#ttft.record(Math.max(0, ms) / 1000, { model })
  }

  /** The gateway's own RPM/TPM limit makes a request wait (`ms` planned) before sending to `provider`. */
  limitWait(provider: string, limit: 'rpm' | 'tpm', ms: number): void {
    this.#waitStarted({ provider, reason: limit }, ms)
  }

  /**
   * The current request's wait, if one is in progress, is over (admission
   * settled or decided again): recorded as long as it lasted on the
   * gateway's clock — a wait its client left, or its deadline cut, lasted
   * until then, not its planned length.
   */
  waitEnded(): void {
    const scope = currentRequest()
    const wait = scope?.wait
    // Another gateway's request (one process, two gateways): its own metrics record it.
    if (wait === undefined || (scope as RequestScope).owner !== this.#owner) return
    ;(scope as RequestScope).wait = undefined
    const ms = this.#clock.now() - wait.startedAt
    this.#waitDuration.record(Math.max(0, ms) / 1000, wait.attributes)
  }

  /** A wait begins: counted now, its length recorded when it ends (`waitEnded`). */
  #waitStarted(attributes: Record<string, string>, plannedMs: number): void {
    this.#waits.add(1, attributes)
    const scope = currentRequest()
    if (scope === undefined) {
      // Outside any request's scope no end can be told: the plan is all there is.
      this.#waitDuration.record(Math.max(0, plannedMs) / 1000, attributes)
      return
    }
    this.waitEnded()
    scope.wait = { attributes, startedAt: this.#clock.now() }
  }

  /** A client's retry met `provider`'s retry budget: let through (and counted) or refused. */
  clientRetry(provider: string, outcome: 'admitted' | 'refused'): void {
    this.#clientRetries.add(1, { provider, outcome })
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#unsubscribe()
    await this.#provider.shutdown().catch(() => {})
  }

  /**
   * The counters whose every series is known at start are on the first page
   * at 0. Prometheus reads a series that first appears at 1 as one that was
   * always 1 (`increase()` and `rate()` start from its first sample), so the
   * event that created it never counted: after every restart, the first
   * deadline expiry or fallback was missing from an alert on `increase(…)`.
   * The others' label values (error kinds, key ids, attempt outcomes) are
   * many, or known only as they come: made up front, most would be series
   * that never move.
   */
  #fromZero(providers: readonly string[]): void {
    for (const statusClass of ['2xx', '4xx', '5xx']) {
      this.#requests.add(0, { status_class: statusClass })
    }
    this.#expiries.add(0)
    for (const provider of providers) this.#fallbacks.add(0, { provider })
  }

  #mine(): boolean {
    return currentRequest()?.owner === this.#owner
  }
}

/** An attempt's series: what the policy decided after it, or `client_closed`. */
function attemptAttributes(m: ChannelMessage<typeof llmChannels.attempt>): Record<string, string> {
  // A client that left ended the attempt: not the provider's failure (llm says `fail`, `aborted`).
  if (leftByClient(m)) return { provider: m.provider, outcome: 'client_closed' }
  return {
    provider: m.provider,
    outcome: m.decision,
    ...(m.errorKind === undefined ? {} : { error_kind: m.errorKind }),
  }
}
