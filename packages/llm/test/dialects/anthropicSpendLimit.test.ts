import { Deadline } from '@hourglass/core'
import { anthropicErrors, type ErrorReply, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { Admission } from '../../src/admission/Admission.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { useFakes, user } from '../call/support/fakes.js'
import { drive, WaitClock } from '../support/waitClock.js'
import { errorOver } from './support/errorOver.js'

/**
 * Anthropic answers the account's monthly spend limit as 429
 * `rate_limit_error` "This request would exceed your account's monthly spend
 * limit. Please try again later.", with no error code, a `retry-after`
 * minutes long and `x-should-retry: true` (`anthropicErrors.monthlySpendLimit`).
 * Read as a rate limit, it was retried and its key cooled and probed again
 * all month; through a gateway the client was told 429 `rate_limit_exceeded`,
 * retry after 60 s. It is the spend cap, as `enforced_spend_limit_reached` is.
 */

const fakes = useFakes()
const anthropicDialect = dialects.anthropic

/** What a client receives for `r` over a real loopback socket. */
const over = (r: ErrorReply) => errorOver(r.status, JSON.stringify(r.body), { ...r.headers })

const withHeaders = (r: ErrorReply, headers: Record<string, string>): ErrorReply => ({
  ...r,
  headers: { ...r.headers, ...headers },
})

/** Two calls to `models`, `betweenMs` apart on the test's clock: what each returned or threw. */
async function twoCalls(models: Parameters<typeof callModel>[0]['models'], betweenMs: number) {
  const clock = new WaitClock(1_000)
  const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
  const call = async () => {
    using deadline = Deadline.after(15_000, { clock })
    const [settled] = await drive(clock, [
      callModel({
        models,
        request: { messages: [user('hi')], maxTokens: 16 },
        deadline,
        limits: { admission },
      }),
    ])
    return settled?.status === 'fulfilled' ? settled.value : settled?.reason
  }
  const first = await call()
  clock.advance(betweenMs)
  const second = await call()
  return { first, second }
}

describe('Anthropic’s monthly spend limit 429', () => {
  it('is the spend cap: quota_exhausted, not retryable, no wait — as enforced_spend_limit_reached', async () => {
    const limit = anthropicDialect.normalizeError(
      await over(anthropicErrors.monthlySpendLimit({ retryAfterS: 600 })),
    )
    const cap = anthropicDialect.normalizeError(await over(anthropicErrors.spendCapReached()))
    expect(cap).toMatchObject({ kind: 'quota_exhausted', retryable: false })
    expect(limit).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
      status: 429,
      providerCode: 'rate_limit_error',
      message:
        "This request would exceed your account's monthly spend limit. Please try again later.",
    })
    // No wait: the month is the wait; a wait would cool the key and probe it again.
    expect(limit?.retryAfterMs).toBeUndefined()
    expect(cap?.retryAfterMs).toBeUndefined()
    // A rate limit with the same headers stays one, retried after its wait.
    const rate = anthropicDialect.normalizeError(
      await over(
        withHeaders(anthropicErrors.rateLimited({ retryAfterS: 7 }), { 'x-should-retry': 'true' }),
      ),
    )
    expect(rate).toMatchObject({ kind: 'rate_limited', retryable: true, retryAfterMs: 7000 })
  })

  it('through callModel: asked once, the key retired (not probed again after its retry-after), the next model answers', async () => {
    const limited = await fakes.start({
      dialect: 'anthropic',
      reply: anthropicErrors.monthlySpendLimit({ retryAfterS: 1 }),
    })
    const backup = await fakes.start({ dialect: 'openai', reply: reply.text('from the backup') })
    const claude = fakes.adapter(
      anthropic({ baseURL: limited.baseURL, apiKey: 'sk-ant-spent', model: 'claude' }),
    )
    const other = fakes.adapterFor('openai', backup.baseURL, 'gpt-4o')
    const { first, second } = await twoCalls([claude, other], 5_000)
    expect(first).toMatchObject({ text: 'from the backup' })
    expect(second).toMatchObject({ text: 'from the backup' })
    // Before: cooled for its retry-after as a rate limit, and asked again.
    expect(limited.requests).toHaveLength(1)
  })

  it('alone, fails at once: not retried for its x-should-retry: true', async () => {
    const limited = await fakes.start({
      dialect: 'anthropic',
      reply: anthropicErrors.monthlySpendLimit({ retryAfterS: 1 }),
    })
    const claude = fakes.adapter(
      anthropic({ baseURL: limited.baseURL, apiKey: 'sk-ant-spent', model: 'claude' }),
    )
    const { first } = await twoCalls([claude], 5_000)
    expect(isModelUnavailable(first)).toBe(true)
    expect(first).toMatchObject({ cause: { kind: 'quota_exhausted' } })
    // Before: three requests, a second apart.
    expect(limited.requests).toHaveLength(1)
  })
})

describe('x-should-retry: true on a refusal no retry lifts', () => {
  it('the spend cap with x-should-retry: true and retry-after: 1 is asked once, its key retired', async () => {
    const capped = await fakes.start({
      dialect: 'anthropic',
      reply: withHeaders(anthropicErrors.spendCapReached(), {
        'x-should-retry': 'true',
        'retry-after': '1',
      }),
    })
    const claude = fakes.adapter(
      anthropic({ baseURL: capped.baseURL, apiKey: 'sk-ant-capped', model: 'claude' }),
    )
    const { first } = await twoCalls([claude], 5_000)
    expect(first).toMatchObject({ cause: { kind: 'quota_exhausted', retryable: false } })
    // Before: three requests, and the key cooled a second, not retired.
    expect(capped.requests).toHaveLength(1)
  })

  it('a rejected key, a spent credit balance and a content refusal stay not retryable', async () => {
    const header = { 'x-should-retry': 'true' }
    for (const [r, kind] of [
      [anthropicErrors.authentication(), 'auth'],
      [
        anthropicErrors.invalidRequest(
          'Your credit balance is too low to access the Anthropic API.',
        ),
        'quota_exhausted',
      ],
      [anthropicErrors.usageLimitReached(), 'quota_exhausted'],
      [anthropicErrors.outputBlocked(), 'content_policy'],
    ] as const) {
      expect(anthropicDialect.normalizeError(await over(withHeaders(r, header)))).toMatchObject({
        kind,
        retryable: false,
      })
    }
  })

  it('still has its say where it is meant to: true retries a 5xx, false stops a retry', async () => {
    expect(
      anthropicDialect.normalizeError(
        await over(withHeaders(anthropicErrors.apiError(), { 'x-should-retry': 'true' })),
      ),
    ).toMatchObject({ kind: 'server_error', retryable: true })
    expect(
      anthropicDialect.normalizeError(
        await over(anthropicErrors.overloaded({ shouldRetry: false })),
      ),
    ).toMatchObject({ retryable: false })
    expect(
      anthropicDialect.normalizeError(
        await over(
          withHeaders(anthropicErrors.rateLimited({ retryAfterS: 1 }), {
            'x-should-retry': 'false',
          }),
        ),
      ),
    ).toMatchObject({ kind: 'rate_limited', retryable: false })
  })
})
