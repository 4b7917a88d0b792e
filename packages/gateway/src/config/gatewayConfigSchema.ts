import { escapeId, isHeaderName, isHeaderValue, isVisibleAscii, quoted } from '@hourglass/core'
import { MAX_LIMIT_WINDOW_MS } from '@hourglass/llm'
import { z } from 'zod'
import { baseURLProblem, dialects } from '../llm.js'
import { redisTarget, redisUrlProblems } from '../redisTarget.js'
import { type Env, envString } from './envString.js'
import { isQuoted } from './isQuoted.js'
import { modelNameProblem, shownChar } from './modelNameProblem.js'
import { quotedKeyHeaders } from './quotedKeyHeaders.js'
import { replacedHeaders } from './replacedHeaders.js'

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

/** A byte limit: a whole number of bytes, 1 or more. */
const byteCount = z
  .number('expected a number of bytes')
  .int('expected a whole number of bytes')
  .min(1, 'expected 1 byte or more')

const tierPrice = z.strictObject({
  inputPerMTok: z.number('expected USD per million input tokens').min(0),
  outputPerMTok: z.number('expected USD per million output tokens').min(0),
  cachedInputPerMTok: z.number('expected USD per million cached input tokens').min(0).optional(),
  // Absent: llm's CostBudget charges a cache write at twice the input price.
  cacheCreationInputPerMTok: z
    .number('expected USD per million cache-write input tokens')
    .min(0)
    .optional(),
  // Absent: twice the input price (Anthropic's 1-hour writes).
  cacheCreation1hInputPerMTok: z
    .number('expected USD per million 1-hour cache-write input tokens')
    .min(0)
    .optional(),
})

/**
 * llm's `ModelPrice`: the standard tier's prices, and (`serviceTiers`) the
 * other tiers' by the provider's name for them (`priority`, `flex`).
 */
const price = z.strictObject({
  ...tierPrice.shape,
  serviceTiers: z
    .record(
      nonEmpty,
      tierPrice,
      'expected an object of tier name → { inputPerMTok, outputPerMTok }',
    )
    .optional(),
  uncappedReasoningTokens: z
    .number('expected a whole number of tokens')
    .int('expected a whole number of tokens')
    .min(0)
    .optional(),
  // What a request past `aboveInputTokens` of input costs (Gemini 2.5 Pro past 200K).
  longContext: z
    .strictObject({
      ...tierPrice.shape,
      aboveInputTokens: z
        .number('expected a whole number of tokens')
        .int('expected a whole number of tokens')
        .min(0),
    })
    .optional(),
})

/**
 * What a provider's name may hold. It travels further than the config: in
 * every answer's `x-hourglass-provider` header (where a non-ASCII or control
 * character throws after the provider answered and billed, or arrives
 * garbled), as a metric label and in log fields. Plain token characters.
 */
const PROVIDER_CHAR = /^[A-Za-z0-9._:/-]$/

/**
 * The adapters send to `baseURL` + the dialect's path, as text, through
 * undici: a `user:password@` is dropped on the way (every request a 401
 * that retires the provider's keys, and the password travels in the
 * endpoint the diagnostics events carry), and a `?query` or `#fragment`
 * swallows the path (`/v1?api-version=1/chat/completions` asks `/v1`).
 * A URL that does not parse is said by the URL check before these.
 */
function hasUserInfo(url: string): boolean {
  const parsed = parseURL(url)
  return parsed !== undefined && (parsed.username !== '' || parsed.password !== '')
}

function hasQueryOrFragment(url: string): boolean {
  // The characters, not `search`: a bare `?` parses to an empty one and still swallows the path.
  return parseURL(url) !== undefined && (url.includes('?') || url.includes('#'))
}

function parseURL(url: string): URL | undefined {
  try {
    return new URL(url)
  } catch {
    return undefined
  }
}

/** A record of names that must not be empty (a gateway without providers or models serves nothing). */
const nonEmptyRecord = <T extends z.ZodType>(value: T, what: string) =>
  z
    .record(nonEmpty, value, `expected an object of ${what}`)
    .refine(
      (r) => Object.keys(r).length > 0,
      `expected at least one entry (no ${what}, nothing to serve)`,
    )

/**
 * The JSON config, as zod checks it. Built per parse because `{ "env": NAME }`
 * values resolve against the environment given, and a missing variable must be
 * reported at its field like any other mistake. Every string value (not the
 * names used as object keys) may be `{ "env": NAME }`.
 */
export function gatewayConfigSchema(env: Env) {
  const text = envString(
    env,
    z.string('expected a string or { "env": NAME }').min(1, 'expected a non-empty string'),
  )
  const oneOf = <const V extends readonly [string, ...string[]]>(values: V) =>
    envString(env, z.enum(values, `expected one of ${values.join(', ')}`))
  const apiKey = envString(
    env,
    z
      .string('expected a non-empty string or { "env": NAME }')
      .min(1, { error: 'expected a non-empty string', abort: true })
      // A key travels in an HTTP header (`authorization`, `x-api-key`…), where a
      // line break, a control or a non-ASCII character (a trailing newline from
      // a secret file, usually) fails every request in the HTTP client, reported
      // as a network error and retried, not as the config mistake it is.
      .refine(isVisibleAscii, {
        error:
          'expected visible ASCII characters only (no spaces, line breaks or control characters: a key is sent in an HTTP header)',
        abort: true,
      })
      // `KEY="sk-…"` in a file read by `docker run --env-file` (or a
      // systemd EnvironmentFile with single quotes kept): the quotes are
      // the variable's value, sent as part of the key. No provider's key
      // holds one: every request was a 401 and the keys were retired, for
      // a mistake the config can name at start.
      .refine(
        (key) => !isQuoted(key),
        'expected no quotes around the key: they would be sent as part of it (an env file read by `docker run --env-file` keeps them: write KEY=sk-… without quotes)',
      ),
  )

  // A model name goes into the upstream request as it is (Gemini's in the
  // URL path): a newline or space at either end — what a secret file or
  // `echo` into an env variable leaves — asked for `gemini-x%0A`, a model no
  // provider has, at every request. Refused as the API keys' is, not trimmed:
  // the value is what the operator wrote, and the config says where.
  const upstreamModel = envString(
    env,
    z
      .string('expected a string or { "env": NAME }')
      .min(1, { error: 'expected a non-empty string', abort: true })
      .refine(
        (name) => name.trim() === name,
        'expected no spaces or line breaks at either end (a trailing newline from a file or `echo`, usually): the model name is sent as it is',
      ),
  )
  const target = z.strictObject({ provider: text, model: upstreamModel })

  const route = z.strictObject({
    /** Model (entry name) for short, tool-free requests. */
    small: text,
    /** Model (entry name) for everything else. */
    large: text,
    /** A prompt estimated above this many tokens goes to `large`. Default 1000. */
    maxSmallPromptTokens: count.default(1000),
    /** A request that offers tools goes to `large`. Default true. */
    largeWhenTools: z.boolean('expected true or false').default(true),
  })

  const providerFields = z.strictObject({
    dialect: oneOf(DIALECTS),
    baseURL: envString(
      env,
      z
        .url({ protocol: /^https?$/, error: 'expected an http(s) URL' })
        .refine((url) => !hasUserInfo(url), {
          message:
            'expected no user or password in the URL: they are not sent (the provider answers 401 and the keys are retired); put a credential in apiKeys or headers',
        })
        .refine((url) => !hasQueryOrFragment(url), {
          message:
            'expected no query string or fragment: the request path is appended to baseURL, so it would land inside them',
        }),
    ),
    apiKeys: z.array(apiKey, 'expected an array of keys').default([]),
    /** Extra request headers (never logged). */
    headers: z
      .record(
        z
          .string()
          .refine(isHeaderName, 'expected an HTTP header name (letters, digits, -, no spaces)'),
        envString(
          env,
          z
            .string('expected a string or { "env": NAME }')
            .refine(
              isHeaderValue,
              'expected an HTTP header value: visible ASCII, spaces inside only, no line breaks or control characters',
            ),
        ),
      )
      .optional(),
    limits: z.strictObject({ rpm: count.optional(), tpm: count.optional() }).optional(),
    prices: z.record(z.string(), price).optional(),
    /** The most of an answer's body read from this provider (llm's adapter option). */
    maxResponseBytes: byteCount.optional(),
    /** The most of a streamed answer read from this provider, in all (llm's adapter option). */
    maxStreamBytes: byteCount.optional(),
    /**
     * The longest an attempt waits for this provider's response headers, in
     * ms: for a non-streamed answer the whole generation (its headers come
     * after it), for a stream the wait until it starts. Past it the attempt
     * is a `timeout` and the next model of the fallback list is asked.
     * Default: 600 000 (the gateway's fetch), so long generations are not cut.
     * It only shortens the fetch's own limit (a per-request undici
     * `headersTimeout`, which @hourglass/fetch narrows to, never widens to).
     */
    headersTimeoutMs: positiveMs('the wait for response headers').optional(),
  })
  const provider = providerFields
    .superRefine(replacedHeaderIssues, {
      // Run even when the entry's other fields are wrong (a bad limit, a
      // missing env variable): every refused header is listed with them.
      when: () => true,
    })
    .superRefine(baseURLIssues, { when: () => true })
    .superRefine(quotedKeyHeaderIssues, { when: () => true })
    .superRefine(repeatedHeaderIssues, { when: () => true })

  const model = z
    .strictObject({
      fallback: z
        .array(target, 'expected an array of { provider, model }')
        .min(1, 'expected at least one target')
        .optional(),
      route: route.optional(),
    })
    .refine(
      (m) => !isRecord(m) || (m['fallback'] === undefined) !== (m['route'] === undefined),
      // Also when a target inside is wrong: every problem at once.
      { message: 'expected exactly one of "fallback" or "route"', when: () => true },
    )

  return z
    .strictObject({
      providers: nonEmptyRecord(provider, 'providers'),
      models: nonEmptyRecord(model, 'models'),
      aliases: z.record(nonEmpty, text).default({}),
      deadline: z
        .strictObject({
          defaultMs: positiveMs('the default budget').optional(),
          maxMs: positiveMs('the largest budget').optional(),
          reserveMs: wholeMs('the reserve').optional(),
        })
        .superRefine(deadlineIssues)
        .transform(deadlineDefaults)
        .prefault({}),
      policy: z
        .strictObject({
          maxAttempts: z.number().int().min(1).max(10, 'expected at most 10').default(2),
          max529Retries: count.default(1),
          priority: oneOf(['foreground', 'background']).default('foreground'),
          defaultMaxTokens: z.number().int().min(1).default(4096),
          maxCostUsdPerRequest: z.number().min(0).optional(),
          /**
           * Streams: the longest an attempt waits for its first token, in ms,
           * before it is a `timeout` and the next model is asked. Default 0 =
           * no limit of its own (the deadline, and a provider's headersTimeoutMs).
           */
          firstTokenTimeoutMs: wholeMs('the wait for the first token').optional(),
        })
        .prefault({}),
      limits: z
        .strictObject({
          // ProviderLimits counts in whole-second windows (rate-limiter-flexible's
          // `duration`), of at most a Node timer's reach: its memory store ends
          // each window with a timer, and a longer one fired after 1 ms (a
          // 30-day window with `rpm: 1` let every request through). The bound
          // ProviderLimits refuses too: here at the field, not at start.
          windowMs: positiveMs('the window')
            .multipleOf(1000, 'expected whole seconds (a multiple of 1000 ms)')
            .max(
              MAX_LIMIT_WINDOW_MS,
              `expected at most ${MAX_LIMIT_WINDOW_MS} ms (24.8 days, the longest a Node timer waits, in whole seconds): a longer window would end at once, limiting nothing`,
            )
            .default(60_000),
          instances: z.number().int().min(1).default(1),
        })
        .prefault({}),
      redis: z
        .strictObject({
          url: envString(
            env,
            z
              .url({ protocol: /^rediss?$/, error: 'expected a redis:// or rediss:// URL' })
              // ioredis dials localhost:6379 for a URL without a host (a
              // `redis://${HOST}` whose HOST was empty): each instance its own
              // Redis, or none, and limits no longer shared by the fleet.
              // `redis:?host=h` parses, but ioredis puts `redis://` before a URL
              // without `//` and dials the host `redis`.
              .refine((url) => !/^rediss?:/i.test(url) || /^rediss?:\/\//i.test(url), {
                error: 'expected a redis:// or rediss:// URL',
                abort: true,
              })
              .refine((url) => {
                // Read as ioredis reads it (a host or socket path in the
                // query too, the last of each); none: it dials localhost.
                const target = redisTarget(url)
                return target === undefined || target.host !== '' || target.path !== ''
              }, 'expected a host (redis://host:port)')
              .superRefine((url, ctx) => {
                for (const message of redisUrlProblems(url)) {
                  ctx.addIssue({ code: 'custom', message })
                }
              }),
          ),
          keyPrefix: text.default('hourglass:gateway'),
          /** A Redis command not answered within this falls back to the local limiter. */
          commandTimeoutMs: z.int().min(1).max(60_000).default(250),
        })
        .optional(),
    })
    .superRefine(crossReferences, {
      // Run even when fields are wrong, so one run lists every problem: an
      // unknown provider in a fallback list is reported next to a missing env
      // variable or a bad dialect, not after they are fixed.
      when: () => true,
    })
}

/**
 * A name from the config quoted back in a message, as JSON writes it, with
 * every control, format or separator character as its escape (`"gpt\n"`,
 * `"a\u202eb"`): each problem is one line (`field: message`), and a name
 * holding a line break split it — a forged second line in the error, and in
 * whatever log it was written to — or hid why the name was unknown.
 */
function shownName(name: string): string {
  return quoted(name, 120)
}

/**
 * Names that must point at something: fallback targets at providers, routes
 * and aliases at models, prices for a cost budget; provider names fit for
 * a header, and model and alias names a client can ask for by URL. `value`
 * may be partly invalid here (see `when` above), so every step checks what
 * it reads; a provider that exists but is itself misconfigured is still
 * "known".
 */
function crossReferences(value: unknown, ctx: z.RefinementCtx): void {
  const issue = (path: PropertyKey[], message: string) =>
    ctx.addIssue({ code: 'custom', path, message })
  if (!isRecord(value)) return
  const providers = isRecord(value['providers']) ? value['providers'] : {}
  const models = isRecord(value['models']) ? value['models'] : {}
  const aliases = isRecord(value['aliases']) ? value['aliases'] : {}
  const policy = isRecord(value['policy']) ? value['policy'] : {}
  const known = Object.keys(providers)
  // Built once, and bounded: written into every unknown-provider line, the
  // whole list made the report grow as providers × lines (300 providers and
  // 1,000 fallbacks naming a renamed one: 11.7 MB; 3,000 and 10,000, from a
  // file under 1 MiB: 16 s, 2.5 GB, and a RangeError, not this error).
  const knownShown = shownNames(known)
  const costBudget = typeof policy['maxCostUsdPerRequest'] === 'number'
  // Here, not as the record's key schema: a name refused there would drop
  // its provider, and every fallback naming it would be reported unknown too.
  for (const name of known) {
    const char = [...name].find((c) => !PROVIDER_CHAR.test(c))
    if (char !== undefined) {
      issue(
        ['providers', name],
        `expected a provider name of ASCII letters, digits and - _ . : / only, not ${shownChar(char)} (it is sent in the x-hourglass-provider header and used as a metric label)`,
      )
    }
  }
  // The names clients ask for (`model`, GET /v1/models/{name}); here for the
  // same reason as the providers': refused as the record's key, an entry
  // would vanish and every route or alias to it be reported unknown too.
  for (const [section, names] of [
    ['models', Object.keys(models)],
    ['aliases', Object.keys(aliases)],
  ] as const) {
    for (const name of names) {
      const problem = name === '' ? undefined : modelNameProblem(name)
      if (problem !== undefined) issue([section, name], problem)
    }
  }
  for (const [name, entry] of Object.entries(models)) {
    if (!isRecord(entry)) continue
    const list = Array.isArray(entry['fallback']) ? entry['fallback'] : []
    /** `[provider, model]` as JSON → the index that first named it (a name may hold `/`). */
    const seen = new Map<string, number>()
    list.forEach((t: unknown, i) => {
      if (!isRecord(t) || typeof t['provider'] !== 'string') return
      // A repeated target is asked again after it just failed, on the same
      // keys and limits: the next model's turn and the budget spent on it.
      if (typeof t['model'] === 'string') {
        // Joined as JSON, not `provider/model`: both names may hold a `/`
        // (`openrouter` + `anthropic/claude` is not `openrouter/anthropic` + `claude`).
        const key = JSON.stringify([t['provider'], t['model']])
        const first = seen.get(key)
        if (first !== undefined) {
          issue(
            ['models', name, 'fallback', i],
            `repeats fallback[${first}] (provider ${shownName(t['provider'])}, model ${shownName(t['model'])}): each target is asked once (policy.maxAttempts sets its retries)`,
          )
        } else seen.set(key, i)
      }
      const p = Object.hasOwn(providers, t['provider']) ? providers[t['provider']] : undefined
      if (p === undefined) {
        issue(
          ['models', name, 'fallback', i, 'provider'],
          `unknown provider ${shownName(t['provider'])} (known: ${knownShown})`,
        )
      } else if (costBudget && typeof t['model'] === 'string' && isRecord(p)) {
        const prices = isRecord(p['prices']) ? p['prices'] : {}
        if (!Object.hasOwn(prices, t['model'])) {
          issue(
            ['models', name, 'fallback', i, 'model'],
            `no price for ${shownName(t['model'])} in providers.${escapeId(t['provider'])}.prices (policy.maxCostUsdPerRequest needs one)`,
          )
        }
      }
    })
    const route = entry['route']
    if (isRecord(route)) {
      for (const side of ['small', 'large'] as const) {
        const to = route[side]
        if (typeof to !== 'string') continue
        const target = Object.hasOwn(models, to) ? models[to] : undefined
        if (target === undefined)
          issue(['models', name, 'route', side], `unknown model ${shownName(to)}`)
        else if (isRecord(target) && target['fallback'] === undefined) {
          issue(
            ['models', name, 'route', side],
            `${shownName(to)} is a route; a route must point at a model with a fallback list`,
          )
        }
      }
    }
  }
  for (const [alias, to] of Object.entries(aliases)) {
    if (Object.hasOwn(models, alias)) {
      issue(['aliases', alias], `${shownName(alias)} is already a model name`)
    } else if (typeof to === 'string' && !Object.hasOwn(models, to)) {
      issue(['aliases', alias], `unknown model ${shownName(to)}`)
    }
  }
}

/**
 * The deadline's fields against each other, read as the operator wrote them
 * (before `deadlineDefaults` fills the one left out), each problem said of a
 * field written: read after, a default budget that followed `maxMs` was
 * named `deadline.defaultMs`, a field never written. Runs only once every
 * field is valid: a `maxMs` of 0 added a second line about a valid reserve.
 */
function deadlineIssues(
  deadline: {
    defaultMs?: number | undefined
    maxMs?: number | undefined
    reserveMs?: number | undefined
  },
  ctx: z.RefinementCtx,
): void {
  const { defaultMs, maxMs, reserveMs } = deadline
  // zod runs this beside a field's own problems: weigh valid fields alone.
  const valid = (ms: number | undefined, least: number) =>
    ms === undefined || (Number.isInteger(ms) && ms >= least)
  if (!valid(defaultMs, 1) || !valid(maxMs, 1) || !valid(reserveMs, 0)) return
  const issue = (field: string, message: string) =>
    ctx.addIssue({ code: 'custom', path: [field], message })
  // Only both set can disagree: one left out follows the other (`deadlineDefaults`).
  if (defaultMs !== undefined && maxMs !== undefined && defaultMs > maxMs) {
    issue('defaultMs', `must not exceed deadline.maxMs (${maxMs})`)
  }
  // The reserve comes off every budget: one as large as the default budget
  // leaves a request without a deadline header no time at all (every one a 504).
  if (reserveMs === undefined) return
  const budget = defaultBudget(deadline)
  if (reserveMs >= budget.ms) issue('reserveMs', `must be less than ${budget.said} (${budget.ms})`)
}

/** The budget of a request that names none, and how to say where it comes from. */
function defaultBudget(deadline: { defaultMs?: number | undefined; maxMs?: number | undefined }): {
  ms: number
  said: string
} {
  const { defaultMs, maxMs } = deadline
  if (defaultMs !== undefined) return { ms: defaultMs, said: 'deadline.defaultMs' }
  if (maxMs !== undefined && maxMs < DEFAULT_BUDGET_MS) {
    return {
      ms: maxMs,
      said: 'deadline.maxMs, which the default budget follows without a defaultMs',
    }
  }
  return { ms: DEFAULT_BUDGET_MS, said: 'the default budget, deadline.defaultMs’s default' }
}

const DEFAULT_BUDGET_MS = 60_000
const DEFAULT_MAX_BUDGET_MS = 300_000

/**
 * `deadline.defaultMs` and `maxMs` with their defaults, one left out
 * following the other, as core's ingress options (so express's `deadline()`)
 * take them: `maxMs: 30000` alone caps every request at 30 s, the default
 * budget too, and `defaultMs: 400000` alone raises the cap to it. Each
 * defaulted on its own (60 s, 300 s), either alone was refused as "defaultMs
 * must not exceed maxMs", naming a field the operator never wrote.
 */
function deadlineDefaults(deadline: {
  defaultMs?: number | undefined
  maxMs?: number | undefined
  reserveMs?: number | undefined
}): {
  defaultMs: number
  maxMs: number
  reserveMs?: number
} {
  const { defaultMs, maxMs, reserveMs } = deadline
  return {
    defaultMs: defaultMs ?? Math.min(DEFAULT_BUDGET_MS, maxMs ?? DEFAULT_BUDGET_MS),
    maxMs: maxMs ?? Math.max(DEFAULT_MAX_BUDGET_MS, defaultMs ?? 0),
    ...(reserveMs === undefined ? {} : { reserveMs }),
  }
}

/**
 * A provider's headers the adapter would replace with its own, never
 * sending them, each at its field. `entry` may be partly invalid, or no
 * object at all (see `when` above).
 */
function replacedHeaderIssues(entry: unknown, ctx: z.RefinementCtx): void {
  if (!isRecord(entry)) return
  for (const { header, message } of replacedHeaders(entry)) {
    ctx.addIssue({ code: 'custom', path: ['headers', header], message })
  }
}

/**
 * The dialect's key header, the credential with no `apiKeys`, wrapped in
 * quotes (`quotedKeyHeaders`), each at its field. The value is never
 * quoted back: it is a key.
 */
function quotedKeyHeaderIssues(entry: unknown, ctx: z.RefinementCtx): void {
  if (!isRecord(entry)) return
  for (const header of quotedKeyHeaders(entry)) {
    ctx.addIssue({
      code: 'custom',
      path: ['headers', header],
      message:
        'expected no quotes around the credential: they would be sent as part of it (an env file read by `docker run --env-file` keeps them: write KEY=sk-… without quotes)',
    })
  }
}

/**
 * A header written twice in one provider's `headers`, in another letter case
 * (`Authorization` and `authorization`): one header to HTTP, and the client
 * sends one value of the two, dropping the other without a word — as JSON
 * does a key written twice (`duplicateJsonKeys`), which the exact spelling
 * passed. Said at the second, naming the first.
 */
function repeatedHeaderIssues(entry: unknown, ctx: z.RefinementCtx): void {
  if (!isRecord(entry) || !isRecord(entry['headers'])) return
  const seen = new Map<string, string>()
  for (const name of Object.keys(entry['headers'])) {
    const first = seen.get(name.toLowerCase())
    if (first === undefined) seen.set(name.toLowerCase(), name)
    else {
      ctx.addIssue({
        code: 'custom',
        path: ['headers', name],
        message: `repeats headers[${JSON.stringify(first)}]: header names are one in any letter case, and only one of the two values would be sent (keep one)`,
      })
    }
  }
}

/**
 * A `baseURL` no request of its dialect could be sent to, by llm's rule
 * (`baseURLProblem`, what the adapter refuses it with): a path that already
 * ends in what the adapter appends (`…/chat/completions`, Anthropic's
 * `/v1`), `api.openai.com` without `/v1`, Gemini's OpenAI-compatible
 * address under the `gemini` dialect — each a 404 on every request. Here,
 * not only when the adapters are made at start: there it came after every
 * other problem of the config was fixed, and a config check built on
 * `parseGatewayConfig` passed it. Skipped when the field's own checks
 * (an http(s) URL, no user, no query) already said what is wrong with it,
 * or the dialect is unknown (said at its own field).
 */
function baseURLIssues(entry: unknown, ctx: z.RefinementCtx): void {
  if (!isRecord(entry)) return
  const { baseURL, dialect } = entry
  if (typeof baseURL !== 'string' || typeof dialect !== 'string') return
  if (!Object.hasOwn(dialects, dialect)) return
  if (ctx.issues.some((issue) => issue.path?.[0] === 'baseURL')) return
  const problem = baseURLProblem(baseURL, dialects[dialect as keyof typeof dialects].wire)
  if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['baseURL'], message: problem })
}

/** The most provider names an unknown-provider problem lists. */
const MAX_KNOWN_SHOWN = 20

/** `a, b, c`, or the first `MAX_KNOWN_SHOWN` and how many more; `none`. */
function shownNames(names: readonly string[]): string {
  if (names.length === 0) return 'none'
  const shown = names.slice(0, MAX_KNOWN_SHOWN).map(escapeId).join(', ')
  return names.length > MAX_KNOWN_SHOWN
    ? `${shown}, and ${names.length - MAX_KNOWN_SHOWN} more`
    : shown
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export type GatewayConfigSchema = ReturnType<typeof gatewayConfigSchema>
/** A validated config: defaults filled in, `{ env }` keys resolved. */
export type GatewayConfig = z.output<GatewayConfigSchema>
/** What a config file may contain (defaults optional). */
export type GatewayConfigInput = z.input<GatewayConfigSchema>
export type ProviderConfig = GatewayConfig['providers'][string]
export type ModelTarget = NonNullable<GatewayConfig['models'][string]['fallback']>[number]
