import { z } from 'zod'

const DIALECTS = ['openai', 'deepseek', 'qwen', 'ernie', 'doubao', 'anthropic', 'gemini'] as const

const nonEmpty = z.string('expected a string').min(1, 'expected a non-empty string')
const wholeMs = (what: string) =>
  z
    .number(`expected ${what} in ms`)
    .int('expected a whole number of ms')
    .min(0, 'expected 0 or more')
const positiveMs = (what: string) => wholeMs(what).min(1, 'expected more than 0 ms')
const count = z
  .number('expected a number')
  .int('expected a whole number')
  .min(0, 'expected 0 or more')

const price = z.strictObject({
  inputPerMTok: z.number('expected USD per million input tokens').min(0),
  outputPerMTok: z.number('expected USD per million output tokens').min(0),
})

const target = z.strictObject({ provider: nonEmpty, model: nonEmpty })

const route = z.strictObject({
  /** Model (entry name) for short, tool-free requests. */
  small: nonEmpty,
  /** Model (entry name) for everything else. */
  large: nonEmpty,
  /** A prompt estimated above this many tokens goes to `large`. Default 1000. */
  maxSmallPromptTokens: count.default(1000),
  /** A request that offers tools goes to `large`. Default true. */
  largeWhenTools: z.boolean('expected true or false').default(true),
})

/**
 * The JSON config, as zod checks it. Built per parse because `{ "env": NAME }`
 * keys resolve against the environment given, and a missing variable must be
 * reported at its field like any other mistake.
 */
export function gatewayConfigSchema(env: Readonly<Record<string, string | undefined>>) {
  const apiKey = z
    .union(
      [nonEmpty, z.strictObject({ env: nonEmpty })],
      'expected a non-empty string or { "env": NAME }',
    )
    .transform((value, ctx) => {
      if (typeof value === 'string') return value
      const resolved = env[value.env]
      if (resolved === undefined || resolved === '') {
        ctx.addIssue({ code: 'custom', message: `environment variable ${value.env} is not set` })
        return z.NEVER
      }
      return resolved
    })

  const provider = z.strictObject({
    dialect: z.enum(DIALECTS, `expected one of ${DIALECTS.join(', ')}`),
    baseURL: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }),
    apiKeys: z.array(apiKey, 'expected an array of keys').default([]),
    /** Extra request headers (never logged). */
    headers: z.record(z.string(), z.string()).optional(),
    limits: z.strictObject({ rpm: count.optional(), tpm: count.optional() }).optional(),
    prices: z.record(z.string(), price).optional(),
  })

  const model = z
    .strictObject({
      fallback: z
        .array(target, 'expected an array of { provider, model }')
        .min(1, 'expected at least one target')
        .optional(),
      route: route.optional(),
    })
    .refine((m) => (m.fallback === undefined) !== (m.route === undefined), {
      message: 'expected exactly one of "fallback" or "route"',
    })

  return z
    .strictObject({
      providers: z.record(nonEmpty, provider, 'expected an object of providers'),
      models: z.record(nonEmpty, model, 'expected an object of models'),
      aliases: z.record(nonEmpty, nonEmpty).default({}),
      deadline: z
        .strictObject({
          defaultMs: positiveMs('the default budget').default(60_000),
          maxMs: positiveMs('the largest budget').default(300_000),
          reserveMs: wholeMs('the reserve').optional(),
        })
        .prefault({}),
      policy: z
        .strictObject({
          maxAttempts: z.number().int().min(1).max(10, 'expected at most 10').default(2),
          max529Retries: count.default(1),
          priority: z.enum(['foreground', 'background']).default('foreground'),
          defaultMaxTokens: z.number().int().min(1).default(4096),
          maxCostUsdPerRequest: z.number().min(0).optional(),
        })
        .prefault({}),
      limits: z
        .strictObject({
          windowMs: positiveMs('the window').default(60_000),
          instances: z.number().int().min(1).default(1),
        })
        .prefault({}),
      redis: z
        .strictObject({
          url: z.url({ protocol: /^rediss?$/, error: 'expected a redis:// or rediss:// URL' }),
          keyPrefix: nonEmpty.default('hourglass:gateway'),
          /** A Redis command not answered within this falls back to the local limiter. */
          commandTimeoutMs: z.int().min(1).max(60_000).default(250),
        })
        .optional(),
    })
    .superRefine((config, ctx) => {
      const issue = (path: PropertyKey[], message: string) =>
        ctx.addIssue({ code: 'custom', path, message })
      const providers = Object.keys(config.providers)
      for (const [name, entry] of Object.entries(config.models)) {
        entry.fallback?.forEach((t, i) => {
          const p = config.providers[t.provider]
          if (p === undefined) {
            issue(
              ['models', name, 'fallback', i, 'provider'],
              `unknown provider "${t.provider}" (known: ${providers.join(', ') || 'none'})`,
            )
          } else if (
            config.policy.maxCostUsdPerRequest !== undefined &&
            p.prices?.[t.model] === undefined
          ) {
            issue(
              ['models', name, 'fallback', i, 'model'],
              `no price for "${t.model}" in providers.${t.provider}.prices (policy.maxCostUsdPerRequest needs one)`,
            )
          }
        })
        if (entry.route) {
          for (const side of ['small', 'large'] as const) {
            const to = config.models[entry.route[side]]
            if (to?.fallback === undefined) {
              issue(
                ['models', name, 'route', side],
                to === undefined
                  ? `unknown model "${entry.route[side]}"`
                  : `"${entry.route[side]}" is a route; a route must point at a model with a fallback list`,
              )
            }
          }
        }
      }
      for (const [alias, to] of Object.entries(config.aliases)) {
        if (Object.hasOwn(config.models, alias)) {
          issue(['aliases', alias], `"${alias}" is already a model name`)
        } else if (!Object.hasOwn(config.models, to)) {
          issue(['aliases', alias], `unknown model "${to}"`)
        }
      }
      if (config.deadline.defaultMs > config.deadline.maxMs) {
        issue(
          ['deadline', 'defaultMs'],
          `must not exceed deadline.maxMs (${config.deadline.maxMs})`,
        )
      }
    })
}

export type GatewayConfigSchema = ReturnType<typeof gatewayConfigSchema>
/** A validated config: defaults filled in, `{ env }` keys resolved. */
export type GatewayConfig = z.output<GatewayConfigSchema>
/** What a config file may contain (defaults optional). */
export type GatewayConfigInput = z.input<GatewayConfigSchema>
export type ProviderConfig = GatewayConfig['providers'][string]
export type ModelTarget = z.output<typeof target>
