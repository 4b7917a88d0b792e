import { refuseUnknownOptions } from '@hourglass/core'
import { canonicalEndpoint } from '../admission/keyId.js'
import { RetryBudget, type RetryBudgetOptions } from './RetryBudget.js'

/** Every option a budget reads (the type checker keeps the list whole). */
const OPTION_NAMES = Object.keys({
  maxTokens: true,
  tokenRatio: true,
} satisfies Record<keyof RetryBudgetOptions, true>)

/**
 * Buckets kept at most (as admission keeps at most `MAX_IDLE_SLOTS` idle
 * slots): a service that builds adapters from its clients' input — each
 * tenant's own endpoint, an adapter name per tenant — kept one for every
 * endpoint it was ever shown, for the life of the process.
 */
export const MAX_RETRY_BUDGETS = 4096

/**
 * One `RetryBudget` per provider, created on first use with shared options.
 * Budgets are per provider so one provider's 429 storm cannot stop retries
 * to the others. Keep one registry per process (or per gateway) so every
 * call to a provider drains and refills the same bucket.
 */
export class RetryBudgetRegistry {
  readonly #options: RetryBudgetOptions
  readonly #budgets = new Map<string, RetryBudget>()

  constructor(options: RetryBudgetOptions = {}) {
    // Ignored, `tokenRatioo` left the default refill ratio in force.
    refuseUnknownOptions(options, OPTION_NAMES, 'new RetryBudgetRegistry()')
    // Validate once, up front, rather than on the first call to a provider.
    new RetryBudget(options)
    this.#options = { ...options }
  }

  /**
   * The budget of the provider an adapter sends to: its name and base URL,
   * as admission keys its cooldowns. By name alone, every
   * `openAICompatible` adapter (all named `openai` unless given a `name`)
   * shared one bucket: a failing self-hosted endpoint drained the retries
   * of the calls to OpenAI itself. `callModel` takes its budgets this way.
   */
  forProvider(target: {
    readonly name: string
    readonly baseURL?: string | undefined
  }): RetryBudget {
    // One spelling per endpoint (`canonicalEndpoint`), as admission's cooldowns have.
    return this.get(
      target.baseURL
        ? `${target.name} ${canonicalEndpoint(withoutCredentials(target.baseURL))}`
        : target.name,
    )
  }

  /**
   * The budget for `provider` (any stable name: `openai`, `anthropic`, a base URL…).
   * Past `MAX_RETRY_BUDGETS` the least recently asked for is forgotten: a
   * provider not called while 4,096 others were starts again with a full
   * bucket (at most `maxTokens / 2` retries more), as a new one does.
   */
  get(provider: string): RetryBudget {
    let budget = this.#budgets.get(provider)
    if (budget !== undefined) {
      // Most recently asked for last, the last let go. A call that holds one
      // let go meanwhile (a long stream) records into it alone.
      this.#budgets.delete(provider)
      this.#budgets.set(provider, budget)
      return budget
    }
    if (this.#budgets.size >= MAX_RETRY_BUDGETS) {
      this.#budgets.delete(this.#budgets.keys().next().value as string)
    }
    budget = new RetryBudget(this.#options)
    this.#budgets.set(provider, budget)
    return budget
  }

  /** Providers kept (their keys: a name, or `forProvider`'s name and base URL, without its credentials), least recently asked for first. */
  providers(): string[] {
    return [...this.#budgets.keys()]
  }
}

/**
 * `baseURL` without its `user:password@`: the name is listed by
 * `providers()` (a metric label, a log line), and a password there was
 * printed with it. A budget protects the endpoint, whoever calls it, so the
 * same endpoint with other credentials shares it. One that does not parse is
 * returned as it is.
 */
function withoutCredentials(baseURL: string): string {
  if (!baseURL.includes('@')) return baseURL
  try {
    const url = new URL(baseURL)
    if (url.username === '' && url.password === '') return baseURL
    url.username = ''
    url.password = ''
    return url.href
  } catch {
    return baseURL
  }
}
