import { optionError, refuseUnknownOptions } from '@hourglass/core'
import { BudgetExceededError } from '../errors/BudgetExceededError.js'
import { UnknownPriceError } from '../errors/UnknownPriceError.js'
import type { ChatRequest, Usage } from '../types.js'
import { estimatePromptTokens, predictedOutputTokens } from './estimatePromptTokens.js'
import { requestedServiceTier } from './requestedServiceTier.js'

/** USD per million tokens at one service tier (`ModelPrice.serviceTiers`). */
export interface TierPrice {
  inputPerMTok: number
  outputPerMTok: number
  /** As `ModelPrice.cachedInputPerMTok`, at this tier. */
  cachedInputPerMTok?: number | undefined
  /** As `ModelPrice.cacheCreationInputPerMTok`, at this tier (absent: twice this tier's input price). */
  cacheCreationInputPerMTok?: number | undefined
  /** As `ModelPrice.cacheCreation1hInputPerMTok`, at this tier (absent: twice this tier's input price). */
  cacheCreation1hInputPerMTok?: number | undefined
}

/**
 * The price of a request whose input is past `aboveInputTokens`
 * (`ModelPrice.longContext`): Gemini 2.5 Pro bills a prompt over 200K tokens
 * at $2.50 input and $15 output per million where a shorter one is $1.25
 * and $10; Anthropic's 1M-context Sonnet 4 and 4.5, past 200K, 2× input and
 * 1.5× output; some OpenAI models past 272K. A cache price it leaves out
 * is the model's, scaled as the input price is (Gemini's $0.125 reads
 * become $0.25, Anthropic's 0.1× reads stay 0.1× of the long input price).
 */
export interface LongContextPrice extends TierPrice {
  /** Input tokens (cache reads and writes included) the request must pass to be billed at this price. */
  aboveInputTokens: number
}

/** USD per million tokens. */
export interface ModelPrice {
  inputPerMTok: number
  outputPerMTok: number
  /**
   * Prices of the model's other service tiers, by the name the provider
   * uses (OpenAI's `priority`, `flex`, `scale`), for requests that set
   * `extra.service_tier` or may be served at another tier. The fields above
   * are the standard tier's (`default`, Anthropic's `standard`).
   *
   * A request is held at the price of the tier it may be billed at: the one
   * it names; for `auto`, and for no `service_tier` at all (OpenAI's `auto`:
   * the tier the project is configured for, which may be priority), the
   * highest of these prices and the standard one — list the tiers your
   * project may use. A tier named that is not listed here is priced as the
   * standard tier when it bills no more (`default`, `standard`,
   * `standard_only`, `flex`, `scale`, `batch`, `on_demand`); any other (`priority`, a name of
   * another provider's) is an
   * `UnknownPriceError`, as an unpriced model is. An answer is charged at the tier that served it (the answer's
   * `serviceTier`), else as it was held.
   */
  serviceTiers?: Readonly<Record<string, TierPrice>> | undefined
  /**
   * USD per million input tokens read from the provider's prompt cache
   * (`Usage.cachedInputTokens`: OpenAI bills them at a half to a tenth of
   * the input price, Anthropic's cache reads at a tenth). Absent: the input
   * price, an over-estimate where the provider discounts them.
   */
  cachedInputPerMTok?: number | undefined
  /**
   * USD per million input tokens written to the provider's prompt cache
   * (`Usage.cacheCreationInputTokens`, Anthropic's
   * `cache_creation_input_tokens`: 1.25× the input price for a 5-minute
   * entry, 2× for a 1-hour one; OpenAI's `cache_write_tokens`: 1.25× from
   * GPT-5.6). Absent: twice the input price, the dearest
   * write Anthropic bills, so a write is never charged below its bill (as
   * plain input it was: the spend fell short of the invoice, and the budget
   * could be overrun). Set it to 1.25× the input price if you write only
   * 5-minute entries, or for OpenAI's models. Writes the usage says are
   * 1-hour ones (`Usage.cacheCreation1hInputTokens`) are priced apart, at
   * `cacheCreation1hInputPerMTok`: where the provider says which writes
   * are (Anthropic's API does, `cache_creation`), set this to 1.25× the
   * input price whatever lifetimes you write.
   */
  cacheCreationInputPerMTok?: number | undefined
  /**
   * USD per million input tokens written to 1-hour cache entries
   * (`Usage.cacheCreation1hInputTokens`, Anthropic's
   * `cache_creation.ephemeral_1h_input_tokens`: 2× the input price). Absent:
   * twice the input price, or `cacheCreationInputPerMTok` if that is dearer. Priced with the other writes at
   * `cacheCreationInputPerMTok`, a 5-minute price charged them 62.5% of
   * their bill.
   */
  cacheCreation1hInputPerMTok?: number | undefined
  /**
   * Reasoning tokens the model may generate, and the provider bill as
   * output, beyond `maxTokens`: for a provider whose cap leaves the
   * reasoning out (DeepSeek-R1's first API: up to 32K tokens of chain of
   * thought beside a `max_tokens` of the answer; SiliconFlow's
   * `thinking_budget`). `estimate` adds them to `maxTokens`, so the check
   * before sending holds the real worst case. Default 0: OpenAI, Anthropic
   * and Gemini count reasoning within the cap.
   */
  uncappedReasoningTokens?: number | undefined
  /**
   * What the whole request costs once its input passes
   * `longContext.aboveInputTokens` (every token of it, input and output,
   * as providers bill a long prompt). Held at it when the prompt's
   * estimate is past the threshold, charged at it when the usage's
   * `inputTokens` is. At a service tier, each of its prices is the dearer
   * of the tier's and this. Absent: one price whatever the length — a
   * 300K-token Gemini 2.5 Pro prompt was charged half its bill.
   */
  longContext?: LongContextPrice | undefined
}

export interface CostBudgetOptions {
  /** The most this budget may spend, in USD. `0` = nothing priced may be sent; `Infinity` = no limit. */
  limitUsd: number
  /** Prices per model name, e.g. `{ 'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 } }`. */
  prices: Readonly<Record<string, ModelPrice>>
  /**
   * Prices per provider (the adapter's `name`) and model, looked up before
   * `prices`: for one model name two providers bill differently (a reseller,
   * a cloud's own price). `callModel` names the provider of each attempt, so
   * an attempt is priced at its own provider's price, never another's.
   */
  providerPrices?: Readonly<Record<string, Readonly<Record<string, ModelPrice>>>> | undefined
  /**
   * Count models missing from `prices` as free instead of throwing
   * `UnknownPriceError`. Default `false`: a typo in a model name must not
   * turn the budget off.
   */
  allowUnpriced?: boolean | undefined
}

/** Every option the constructor reads (the type checker keeps the list whole). */
const OPTION_NAMES = Object.keys({
  limitUsd: true,
  prices: true,
  providerPrices: true,
  allowUnpriced: true,
} satisfies Record<keyof CostBudgetOptions, true>)

/** Every field of a tier's price, and of a model's (which adds its own). */
const TIER_PRICE_NAMES = Object.keys({
  inputPerMTok: true,
  outputPerMTok: true,
  cachedInputPerMTok: true,
  cacheCreationInputPerMTok: true,
  cacheCreation1hInputPerMTok: true,
} satisfies Record<keyof TierPrice, true>)
const MODEL_PRICE_NAMES = [
  ...TIER_PRICE_NAMES,
  ...Object.keys({
    serviceTiers: true,
    uncappedReasoningTokens: true,
    longContext: true,
  } satisfies Record<Exclude<keyof ModelPrice, keyof TierPrice>, true>),
]

/**
 * Money as a budget, like time: checked before every attempt, recorded
 * after from the usage the provider reports — or, for an attempt that failed
 * after the provider took it (and so may bill it), from an estimate
 * (`recordEstimate`).
 *
 * `callModel` holds each attempt's estimate (`reserve`) from the check until
 * its cost is recorded, so attempts in flight at once on one budget (parallel
 * calls of an agent, one budget per tenant) cannot together spend past the
 * limit: each is checked against what is spent plus what the others hold.
 * Without the hold, ten concurrent calls each estimated at the whole limit
 * all passed, and spent ten times it.
 */
export class CostBudget {
  readonly limitUsd: number
  readonly #prices: Readonly<Record<string, ModelPrice>>
  readonly #providerPrices: Readonly<Record<string, Readonly<Record<string, ModelPrice>>>>
  readonly #allowUnpriced: boolean
  #spentUsd = 0
  #reservedUsd = 0
  #reservations = 0

  constructor(options: CostBudgetOptions) {
    // Ignored, `allowUnPriced: true` left unpriced models refused and a
    // misspelled `providerPrices` left every provider's own price unread. (A
    // misspelled `limitUsd` was already refused: it is required.) Options
    // that are no object at all are refused below, as before.
    if (typeof options === 'object' && options !== null) {
      refuseUnknownOptions(options, OPTION_NAMES, 'new CostBudget()')
    }
    if (typeof options?.prices !== 'object' || options.prices === null) {
      throw new TypeError('CostBudget: prices must be an object of model name → ModelPrice')
    }
    if (
      typeof options.limitUsd !== 'number' ||
      Number.isNaN(options.limitUsd) ||
      options.limitUsd < 0
    ) {
      throw optionError('CostBudget: limitUsd', 'a number ≥ 0', options.limitUsd)
    }
    checkPrices('prices', options.prices)
    const providerPrices = options.providerPrices ?? {}
    if (typeof providerPrices !== 'object' || providerPrices === null) {
      throw new TypeError(
        'CostBudget: providerPrices must be an object of provider name → model name → ModelPrice',
      )
    }
    for (const [provider, prices] of Object.entries(providerPrices)) {
      if (typeof prices !== 'object' || prices === null) {
        throw new TypeError(
          `CostBudget: providerPrices["${provider}"] must be an object of model name → ModelPrice`,
        )
      }
      checkPrices(`providerPrices["${provider}"]`, prices)
    }
    this.limitUsd = options.limitUsd
    this.#prices = options.prices
    this.#providerPrices = providerPrices
    this.#allowUnpriced = options.allowUnpriced ?? false
  }

  /** USD spent so far (recorded usage, and the estimates of billed failures). */
  get spentUsd(): number {
    return this.#spentUsd
  }

  /** USD left, not counting what attempts in flight hold (`reservedUsd`); never negative. */
  get remainingUsd(): number {
    return Math.max(0, this.limitUsd - this.#spentUsd)
  }

  /** USD held by attempts in flight: their estimates, until their cost is recorded. */
  get reservedUsd(): number {
    return this.#reservedUsd
  }

  /**
   * What one attempt of `request` on `model` may cost, in USD: the prompt
   * (see `estimatePromptTokens`) at the input price plus the whole
   * `maxTokens` at the output price — the worst case the request allows,
   * at the price of the service tier it may be billed at
   * (`ModelPrice.serviceTiers`: the one `extra.service_tier` names; for
   * `auto` or none, the dearest listed). `provider`: whose price
   * (`providerPrices`), when it has one. `dialect`: the wire it is sent on
   * (the adapter's `dialect.name`), for what that provider adds to the
   * prompt (Anthropic's tool-use system prompt).
   */
  estimate(
    model: string,
    request: Pick<ChatRequest, 'messages' | 'tools' | 'extra' | 'maxTokens'>,
    provider?: string,
    dialect?: string,
  ): number {
    // Undefined or NaN made the estimate NaN (refused later as "an estimate",
    // naming nothing the caller wrote); a negative cap took the prompt's own
    // price back, so a check passed for a request the budget could not afford.
    const maxTokens: unknown = request?.maxTokens
    if (typeof maxTokens !== 'number' || !(maxTokens >= 0)) {
      throw optionError(
        'CostBudget.estimate: maxTokens',
        'a number ≥ 0 (the request’s output cap)',
        maxTokens,
      )
    }
    const base = this.#price(model, provider)
    const prompt = estimatePromptTokens(request, dialect)
    const price = atLength(
      base,
      this.#tierPrice(model, base, requestedServiceTier(request)),
      prompt,
    )
    // A prediction's tokens the answer does not use are billed as output,
    // beyond the cap: held as if every one were rejected.
    return cost(price, prompt, worstOutput(base, maxTokens) + predictedOutputTokens(request))
  }

  /**
   * The most output an attempt capped at `maxTokens` may be billed on
   * `model` (of `provider`): `maxTokens` plus the price's
   * `uncappedReasoningTokens`. What `estimate` counts, and what an answer
   * lost whole (its usage unknown) is charged.
   */
  worstOutputTokens(model: string, maxTokens: number, provider?: string): number {
    return worstOutput(this.#price(model, provider), tokens(maxTokens))
  }

  /**
   * Throws `UnknownPriceError` when `model` (of `provider`) has no price, or
   * no price for `serviceTier` (a request's `extra.service_tier`: see
   * `ModelPrice.serviceTiers`), and `allowUnpriced` is not set. Sends
   * nothing; `callModel` checks every model of its list so before the first
   * is sent.
   */
  assertPriced(model: string, provider?: string, serviceTier?: string): void {
    this.#tierPrice(model, this.#price(model, provider), serviceTier)
  }

  /**
   * Throws `BudgetExceededError` when `estimateUsd` does not fit in what is
   * left once the attempts in flight have what they hold. Sends nothing.
   */
  assertCanSpend(estimateUsd: number): void {
    if (typeof estimateUsd !== 'number' || !(estimateUsd >= 0)) {
      throw optionError('CostBudget: an estimate', 'a number ≥ 0', estimateUsd)
    }
    // Within float rounding of the limit is at it: 0.1 spent + 0.2 estimated
    // is 0.30000000000000004 in binary, and must fit a 0.3 limit.
    if (this.#spentUsd + this.#reservedUsd + estimateUsd - this.limitUsd > ROUNDING_USD) {
      throw new BudgetExceededError({
        limitUsd: this.limitUsd,
        spentUsd: this.#spentUsd,
        reservedUsd: this.#reservedUsd,
        estimateUsd,
      })
    }
  }

  /**
   * `assertCanSpend(estimateUsd)`, then holds `estimateUsd` until the
   * reservation is released, so every other check counts it meanwhile.
   * Record the attempt's cost (`record`, `recordEstimate`) before releasing,
   * never after: in between, the attempt's money would be neither held nor
   * spent. `release()` gives the hold back once; later calls do nothing.
   */
  reserve(estimateUsd: number): CostReservation {
    this.assertCanSpend(estimateUsd)
    this.#reservedUsd += estimateUsd
    this.#reservations++
    let held = true
    return {
      usd: estimateUsd,
      release: () => {
        if (!held) return
        held = false
        // Back to exactly 0 when nothing is held: sums and differences of
        // floats leave crumbs (1e-18) that would otherwise stay for ever.
        this.#reservedUsd = --this.#reservations === 0 ? 0 : this.#reservedUsd - estimateUsd
      },
    }
  }

  /**
   * Adds the actual cost of `usage` on `model` (of `provider`, as `estimate`)
   * to the spend and returns it, in USD. `serviceTier`: the tier that served
   * it (`ChatResponse.serviceTier`), priced by `ModelPrice.serviceTiers`;
   * unknown or unpriced, the dearest listed, as `estimate` holds `auto`.
   */
  record(model: string, usage: Usage, provider?: string, serviceTier?: string): number {
    // Usage is the provider's word (or a custom adapter's): untrusted, so
    // clamped. A NaN count made the spend NaN, and a NaN spend never trips
    // the limit again; a negative one would give money back.
    const input = tokens(usage?.inputTokens)
    // Parts of the input: never more than it, together.
    const cached = Math.min(tokens(usage?.cachedInputTokens), input)
    const written = Math.min(tokens(usage?.cacheCreationInputTokens), input - cached)
    const base = this.#price(model, provider)
    const usd = cost(
      atLength(base, billedPrice(base, serviceTier), input),
      input,
      tokens(usage?.outputTokens),
      cached,
      written,
      // A part of the writes, as they are of the input.
      Math.min(tokens(usage?.cacheCreation1hInputTokens), written),
    )
    this.#spend(usd)
    return usd
  }

  /**
   * Adds the estimated cost of an attempt whose usage is unknown — one that
   * failed after the provider took it — to the spend and returns it, in USD:
   * the prompt (`estimatePromptTokens`, as in `estimate`) at the input price
   * plus `outputTokens` at the output price (of `provider`, as `estimate`),
   * at the tier `serviceTier` names when given (the tier that served it),
   * else the request's (`extra.service_tier`), as `record` prices a tier.
   * `dialect`: as for `estimate`.
   */
  recordEstimate(
    model: string,
    request: Pick<ChatRequest, 'messages' | 'tools' | 'extra'>,
    outputTokens: number,
    provider?: string,
    serviceTier?: string,
    dialect?: string,
  ): number {
    const base = this.#price(model, provider)
    const prompt = estimatePromptTokens(request, dialect)
    const usd = cost(
      atLength(base, billedPrice(base, serviceTier ?? requestedServiceTier(request)), prompt),
      prompt,
      tokens(outputTokens),
    )
    this.#spend(usd)
    return usd
  }

  /** Adds to the spend, which stays finite: still over any finite limit. */
  #spend(usd: number): void {
    this.#spentUsd = Math.min(this.#spentUsd + usd, Number.MAX_VALUE)
  }

  #price(model: string, provider: string | undefined): ModelPrice {
    const own =
      provider !== undefined && Object.hasOwn(this.#providerPrices, provider)
        ? this.#providerPrices[provider]!
        : undefined
    if (own !== undefined && Object.hasOwn(own, model)) return own[model]!
    const price = Object.hasOwn(this.#prices, model) ? this.#prices[model] : undefined
    if (price !== undefined) return price
    if (this.#allowUnpriced) return { inputPerMTok: 0, outputPerMTok: 0 }
    throw new UnknownPriceError(model)
  }

  /** `price` at the tier a request names (`tier`), for a check before sending: a tier it cannot price throws. */
  #tierPrice(model: string, price: ModelPrice, tier: string | undefined): ModelPrice {
    const priced = atTier(price, tier)
    if (priced !== undefined) return priced
    // Priced at the standard tier, as an unpriced model is priced at 0.
    if (this.#allowUnpriced) return price
    throw new UnknownPriceError(model, tier)
  }
}

/**
 * Tiers billed at no more than the standard price, priced by the fields of
 * `ModelPrice` when `serviceTiers` does not list them: the standard tier's
 * names (OpenAI's `default`, Anthropic's `standard`, `standard_only`),
 * OpenAI's `flex` (about half the price) and `scale` (prepaid units), and
 * Anthropic's `batch` (half the price) and Groq's `on_demand` (its standard
 * tier): an over-estimate at worst. Any
 * other tier unlisted (`priority`, a new name) is unpriced: refused before
 * sending rather than held at a price below its bill.
 */
const AT_MOST_STANDARD: ReadonlySet<string> = new Set([
  'default',
  'standard',
  'standard_only',
  'flex',
  'scale',
  // Anthropic's batch tier: half the standard price.
  'batch',
  // Groq's standard tier (OpenAI-compatible): its price is the model's.
  'on_demand',
])

/**
 * `price` at `tier`: the tier's own price; the standard one for its names;
 * for `auto` or none (the provider picks: the project's tier), the dearest of
 * all, component by component; `undefined` for a tier it does not price.
 */
function atTier(price: ModelPrice, tier: string | undefined): ModelPrice | undefined {
  const tiers = price.serviceTiers
  if (tier === undefined || tier === 'auto') return dearest(price)
  // A tier without cache prices reads its cache at its own input price and
  // writes it at twice that, not at the standard tier's cache prices.
  if (tiers !== undefined && Object.hasOwn(tiers, tier))
    return {
      ...price,
      cachedInputPerMTok: undefined,
      cacheCreationInputPerMTok: undefined,
      cacheCreation1hInputPerMTok: undefined,
      ...tiers[tier],
    }
  return AT_MOST_STANDARD.has(tier) ? price : undefined
}

/**
 * What an attempt served at `tier` is charged at: as `atTier`, but a tier
 * it does not price (a new name, or none said) is the dearest: the bill is
 * already run up, so a charge never throws, and never under-counts.
 */
function billedPrice(price: ModelPrice, tier: string | undefined): ModelPrice {
  return atTier(price, tier) ?? dearest(price)
}

function dearest(price: ModelPrice): ModelPrice {
  const tiers = price.serviceTiers
  if (tiers === undefined) return price
  let worst: ModelPrice = {
    ...price,
    cachedInputPerMTok: cachedPrice(price),
    cacheCreationInputPerMTok: cacheWritePrice(price),
    cacheCreation1hInputPerMTok: hourWritePrice(price),
  }
  for (const tier of Object.values(tiers)) {
    worst = {
      ...worst,
      inputPerMTok: Math.max(worst.inputPerMTok, tier.inputPerMTok),
      outputPerMTok: Math.max(worst.outputPerMTok, tier.outputPerMTok),
      cachedInputPerMTok: Math.max(worst.cachedInputPerMTok ?? 0, cachedPrice(tier)),
      cacheCreationInputPerMTok: Math.max(
        worst.cacheCreationInputPerMTok ?? 0,
        cacheWritePrice(tier),
      ),
      cacheCreation1hInputPerMTok: Math.max(
        worst.cacheCreation1hInputPerMTok ?? 0,
        hourWritePrice(tier),
      ),
    }
  }
  return worst
}

/**
 * `price` (of `base`, at a tier) for a request of `inputTokens`: past
 * `base.longContext.aboveInputTokens`, each component the dearer of it and
 * the long-context price's, so a long request is never charged below
 * either.
 */
function atLength(base: ModelPrice, price: ModelPrice, inputTokens: number): ModelPrice {
  const long = base.longContext
  if (long === undefined || !(inputTokens > long.aboveInputTokens)) return price
  // A cache price the long-context price leaves out is the model's, scaled
  // as its input price is (Gemini 2.5 Pro's $0.125 reads become $0.25 past
  // 200K, Anthropic's 1M Sonnet's 0.1× of its $6): taken as the long input
  // price, a mostly cached long prompt — Gemini caches implicitly — was
  // charged 6.8× its bill.
  const scale = base.inputPerMTok > 0 ? long.inputPerMTok / base.inputPerMTok : 1
  // A free price stays free, and a free scale frees it: the ratio of two
  // finite prices can overflow to Infinity (1e308 / 0.5), and a default
  // write price of a finite one too (2 × 1e308): times 0, NaN — a NaN
  // charge made the spend NaN, which never trips the limit again.
  const scaled = (perMTok: number) => (perMTok === 0 || scale === 0 ? 0 : scale * perMTok)
  const longCached = long.cachedInputPerMTok ?? scaled(cachedPrice(base))
  const longWrite = long.cacheCreationInputPerMTok ?? scaled(cacheWritePrice(base))
  const longHourWrite = long.cacheCreation1hInputPerMTok ?? scaled(hourWritePrice(base))
  return {
    ...price,
    inputPerMTok: Math.max(price.inputPerMTok, long.inputPerMTok),
    outputPerMTok: Math.max(price.outputPerMTok, long.outputPerMTok),
    cachedInputPerMTok: Math.max(cachedPrice(price), longCached),
    cacheCreationInputPerMTok: Math.max(cacheWritePrice(price), longWrite),
    cacheCreation1hInputPerMTok: Math.max(hourWritePrice(price), longHourWrite),
  }
}

function cachedPrice(price: TierPrice): number {
  return price.cachedInputPerMTok ?? price.inputPerMTok
}

/**
 * Anthropic bills a cache write at 1.25× (5-minute entry) or 2× (1-hour)
 * its input price; unsaid, the dearer, so a write is never under-charged.
 */
function cacheWritePrice(price: TierPrice): number {
  return price.cacheCreationInputPerMTok ?? CACHE_WRITE_DEFAULT_FACTOR * price.inputPerMTok
}

/**
 * A 1-hour cache write: Anthropic's 2× the input price, unless the price
 * says — and never below the price's other writes (a
 * `cacheCreationInputPerMTok` set above 2×, for a provider whose 1-hour
 * writes cost more, was charged at 2× once the usage said which writes
 * were 1-hour ones).
 */
function hourWritePrice(price: TierPrice): number {
  return (
    price.cacheCreation1hInputPerMTok ??
    Math.max(CACHE_WRITE_DEFAULT_FACTOR * price.inputPerMTok, cacheWritePrice(price))
  )
}

const CACHE_WRITE_DEFAULT_FACTOR = 2

/** An attempt's estimate, held against a `CostBudget` until `release()`. */
export interface CostReservation {
  /** What is held, in USD. */
  readonly usd: number
  /** Gives the hold back; once (later calls do nothing). */
  release(): void
}

/**
 * How far past the limit a sum may land from binary rounding alone: far below
 * any token's price (1e-8 USD at 0.01 USD per million), far above the
 * rounding of sums of thousands of dollars (~1e-13).
 */
const ROUNDING_USD = 1e-10

/**
 * USD for the counts at `price`; `cachedTokens` and `cacheWriteTokens`
 * (parts of `inputTokens`, together no more than it) at the cache's read and
 * write prices, the `hourWriteTokens` of the writes at the 1-hour write price.
 */
function cost(
  price: ModelPrice,
  inputTokens: number,
  outputTokens: number,
  cachedTokens = 0,
  cacheWriteTokens = 0,
  hourWriteTokens = 0,
): number {
  // Finite whatever the counts: a usage of 1e308 tokens (a provider's word)
  // priced at $5 per million was Infinity — in the spend, the attempt
  // record's `costUsd` and the span. The largest finite number is still
  // over any limit.
  return Math.min(
    (priced(inputTokens - cachedTokens - cacheWriteTokens, price.inputPerMTok) +
      priced(cachedTokens, cachedPrice(price)) +
      priced(cacheWriteTokens - hourWriteTokens, cacheWritePrice(price)) +
      priced(hourWriteTokens, hourWritePrice(price)) +
      priced(outputTokens, price.outputPerMTok)) /
      1_000_000,
    Number.MAX_VALUE,
  )
}

/**
 * `tokens` at `perMTok`; none costs 0 whatever the price — the default
 * cache-write price of a finite price past MAX_VALUE / 2 is Infinity, and
 * 0 × Infinity made the spend NaN, which never trips a limit again.
 */
function priced(tokens: number, perMTok: number): number {
  return tokens === 0 ? 0 : tokens * perMTok
}

function worstOutput(price: ModelPrice, maxTokens: number): number {
  return maxTokens + (price.uncappedReasoningTokens ?? 0)
}

/**
 * A reported token count: a number ≥ 0, anything else 0. Past
 * `Number.MAX_SAFE_INTEGER` (Infinity too) it is clamped to it, as the
 * dialects clamp a provider's counts: 0 at a free model's price (Infinity
 * × 0 is NaN), and priced, finite (`cost` bounds the rest).
 */
function tokens(value: unknown): number {
  return typeof value === 'number' && value >= 0 ? Math.min(value, Number.MAX_SAFE_INTEGER) : 0
}

function checkPrices(name: string, prices: Readonly<Record<string, ModelPrice>>): void {
  for (const [model, price] of Object.entries(prices)) {
    checkPrice(`${name}["${model}"]`, price, MODEL_PRICE_NAMES)
    const tiers = price.serviceTiers
    if (tiers !== undefined) {
      if (typeof tiers !== 'object' || tiers === null) {
        throw new TypeError(
          `CostBudget: ${name}["${model}"].serviceTiers must be an object of tier name → price`,
        )
      }
      for (const [tier, tierPrice] of Object.entries(tiers)) {
        checkPrice(`${name}["${model}"].serviceTiers["${tier}"]`, tierPrice, TIER_PRICE_NAMES)
      }
    }
    const uncapped = price.uncappedReasoningTokens
    if (uncapped !== undefined && !(Number.isSafeInteger(uncapped) && uncapped >= 0)) {
      throw new TypeError(
        `CostBudget: ${name}["${model}"].uncappedReasoningTokens must be a whole number of tokens >= 0`,
      )
    }
    const long = price.longContext
    if (long !== undefined) {
      const where = `${name}["${model}"].longContext`
      checkPrice(where, long, [...TIER_PRICE_NAMES, 'aboveInputTokens'])
      if (!(Number.isSafeInteger(long.aboveInputTokens) && long.aboveInputTokens >= 0)) {
        throw new TypeError(
          `CostBudget: ${where}.aboveInputTokens must be a whole number of tokens >= 0`,
        )
      }
    }
  }
}

function checkPrice(name: string, price: TierPrice, names: readonly string[]): void {
  if (!isPrice(price?.inputPerMTok) || !isPrice(price?.outputPerMTok)) {
    throw new TypeError(
      `CostBudget: ${name} needs finite inputPerMTok and outputPerMTok >= 0 (USD per million tokens)`,
    )
  }
  // A misspelled field fell back to its default: `uncappedReasoningToken`
  // to 0, so the budget held none of the reasoning the provider bills.
  refuseUnknownOptions(price, names, `CostBudget: ${name}`, { what: 'field' })
  for (const field of [
    'cachedInputPerMTok',
    'cacheCreationInputPerMTok',
    'cacheCreation1hInputPerMTok',
  ] as const) {
    if (price[field] !== undefined && !isPrice(price[field])) {
      throw new TypeError(
        `CostBudget: ${name}.${field} must be a finite number >= 0 (USD per million tokens)`,
      )
    }
  }
}

function isPrice(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}
