import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { createAdapter } from '../../src/adapters/createAdapter.js'
import { gemini } from '../../src/adapters/gemini.js'
import type { AdapterOptions } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import type { Dialect } from '../../src/dialects/Dialect.js'
import { dialects } from '../../src/dialects/dialects.js'
import {
  isModelUnavailable,
  type ModelUnavailableError,
} from '../../src/errors/ModelUnavailableError.js'
import { RetryBudgetRegistry } from '../../src/retry/RetryBudgetRegistry.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()
const SECRET = 'sk-SECRET-7f3a9c'
const base = { baseURL: 'http://127.0.0.1:1', model: 'm' }
const factories = [
  ['openAICompatible', (o: AdapterOptions) => openAICompatible(o)],
  ['anthropic', (o: AdapterOptions) => anthropic(o)],
  ['gemini', (o: AdapterOptions) => gemini(o)],
  ['createAdapter(qwen)', (o: AdapterOptions) => createAdapter(dialects.qwen, o)],
] as const

/** What the factory threw (nothing, if it made the adapter: then it is closed). */
function thrownBy(make: () => { close(): Promise<void> }): unknown {
  try {
    void make().close()
  } catch (e) {
    return e
  }
  return undefined
}

describe('adapter options undici would refuse are refused when the adapter is made', () => {
  it.each([
    [
      'a trailing newline',
      { apiKey: `${SECRET}\n` },
      /^\S+ adapter: apiKey has a line break at its end \(a secret file’s trailing newline\?\)/,
    ],
    [
      'a trailing CRLF',
      { apiKey: `${SECRET}\r\n` },
      /apiKey has a line break at character 17 of 18/,
    ],
    ['a space', { apiKey: `${SECRET} ` }, /apiKey has a space at its end/],
    ['a space inside', { apiKey: 'sk-SECRET 7f3a9c' }, /apiKey has a space at character 10 of 16/],
    ['a leading tab', { apiKey: `\t${SECRET}` }, /apiKey has a tab at its start/],
    ['a control character', { apiKey: `sk-SECRET\u00007f3a9c` }, /apiKey has a control character/],
    [
      'a non-ASCII character',
      { apiKey: 'sk-SECRET-7f3a9c\u00a0' },
      /apiKey has a non-ASCII character at its end/,
    ],
    ['an empty key', { apiKey: '' }, /apiKey is empty/],
    [
      'the second of several keys',
      { apiKeys: ['sk-fine', `${SECRET}\n`] },
      /apiKeys\[1\] has a line break/,
    ],
    [
      'a key that is no string',
      { apiKeys: ['sk-fine', 42] },
      /apiKeys\[1\] must be a string, got a number/,
    ],
    [
      'keys that are no array',
      { apiKeys: SECRET },
      /apiKeys must be an array of keys, got a string/,
    ],
  ])('an API key with %s: TypeError naming the option, the key not shown', (_, bad, message) => {
    for (const [, make] of factories) {
      const error = thrownBy(() => make({ ...base, ...(bad as AdapterOptions) }))
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toMatch(message)
      expect((error as Error).message).toMatch(/visible ASCII|must be/)
      expect((error as Error).message).not.toContain('SECRET')
    }
  })

  it.each([
    ['a name with a space', { 'x org': 'v' }, /headers\["x org"\] is not an HTTP header name/],
    ['a name with a colon', { 'x-org:': 'v' }, /headers\["x-org:"\] is not an HTTP header name/],
    [
      'a name with a line break',
      { 'x-org\r\nx-evil': 'v' },
      /headers\["x-org\\r\\nx-evil"\] is not an HTTP header name/,
    ],
    ['an empty name', { '': 'v' }, /headers\[""\] is not an HTTP header name/],
    // One header to HTTP: only the last value was sent, the other dropped without a word.
    [
      'a name repeated in another letter case',
      { 'X-Org': 'a', 'x-org': 'b' },
      /headers\["x-org"\] repeats headers\["X-Org"\]: header names are one in any letter case/,
    ],
    [
      'a value with CRLF (header injection)',
      { 'x-org': `${SECRET}\r\nx-evil: 1` },
      /headers\["x-org"\] has a line break at character 17 of 27/,
    ],
    [
      'a value with a control character',
      { 'x-org': `${SECRET}\u0001` },
      /headers\["x-org"\] has a control character at its end/,
    ],
    [
      'a value with a trailing newline',
      { authorization: `Bearer ${SECRET}\n` },
      /headers\["authorization"\] has a line break at its end/,
    ],
    [
      'a value with a space at its start',
      { 'x-org': ` ${SECRET}` },
      /headers\["x-org"\] has a space at its start/,
    ],
    [
      'a value with a tab at its end',
      { 'x-org': `${SECRET}\t` },
      /headers\["x-org"\] has a tab at its end/,
    ],
    [
      'a value that is no string',
      { 'x-org': 7 },
      /headers\["x-org"\] must be a string, got a number/,
    ],
    [
      'transfer-encoding',
      { 'Transfer-Encoding': 'chunked' },
      /headers\["Transfer-Encoding"\] cannot be set: undici refuses it/,
    ],
    [
      'expect',
      { expect: '100-continue' },
      /headers\["expect"\] cannot be set: undici does not support it/,
    ],
    ['content-length', { 'content-length': '10' }, /headers\["content-length"\] cannot be set/],
  ])('a header with %s: TypeError naming it, the value not shown', (_, headers, message) => {
    for (const [, make] of factories) {
      const error = thrownBy(() =>
        make({ ...base, apiKey: 'sk-fine', headers: headers as Record<string, string> }),
      )
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toMatch(message)
      expect((error as Error).message).not.toContain('SECRET')
    }
  })

  it('what the gateway accepts is accepted: visible ASCII keys, token names, spaces inside values, empty and unset values', () => {
    for (const [, make] of factories) {
      expect(
        thrownBy(() =>
          make({
            ...base,
            apiKeys: ['sk-proj-AbC_123.xyz~', 'AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY'],
            headers: {
              'OpenAI-Organization': 'org-123',
              'x-title': 'My app (v2; beta)',
              'x-tabs': 'a\tb',
              'x-empty': '',
              'x-unset': undefined as unknown as string,
              "x-!#$%&'*+.^_`|~": 'ok',
              constructor: 'a name like any other',
              toString: 'so is this',
            },
          }),
        ),
      ).toBeUndefined()
    }
  })
})

describe('an undici InvalidArgumentError while sending is not retried', () => {
  it('fails the model at once (no backoff, no retry-budget token) and goes to the next model', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const backupFake = await fakes.start({ dialect: 'openai' })
    // A header undici refuses that the adapter's options could not catch: one
    // the dialect adds (a custom dialect, or an interceptor's).
    const broken: Dialect = {
      ...dialects.openai,
      buildRequest(request, model) {
        const built = dialects.openai.buildRequest(request, model)
        return { ...built, headers: { ...built.headers, 'x-trace': 'a\r\nb' } }
      },
    }
    const primary = fakes.adapter(
      createAdapter(broken, {
        baseURL: fake.baseURL,
        apiKey: 'sk-1',
        model: 'gpt-4o',
        name: 'primary',
      }),
    )
    const backup = fakes.adapter(
      openAICompatible({
        baseURL: backupFake.baseURL,
        apiKey: 'sk-2',
        model: 'gpt-4o-mini',
        name: 'backup',
      }),
    )
    const budgets = new RetryBudgetRegistry()
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models: [primary, backup],
      request: { messages: [user('hi')], maxTokens: 16 },
      retry: { maxAttempts: 3, delay: FAST_RETRIES, budgets },
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.text).toBe('Hello from the fake provider.')
    expect(records.map((r) => [r.model, r.errorKind, r.decision])).toEqual([
      ['gpt-4o', 'network', 'fallback'],
      ['gpt-4o-mini', undefined, 'success'],
    ])
    expect(records[0]?.reason).toMatch(/not retryable/)
    expect(fake.requests).toHaveLength(0) // nothing ever left
    expect(budgets.forProvider(primary).tokens).toBe(budgets.forProvider(backup).tokens)
  })

  it('with no other model: one attempt, a ModelUnavailableError whose cause says why', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('never') })
    const broken: Dialect = {
      ...dialects.openai,
      authHeaders: () => ({ authorization: 'Bearer sk-1\n' }),
    }
    const adapter = fakes.adapter(
      createAdapter(broken, { baseURL: fake.baseURL, apiKey: 'sk-1', model: 'gpt-4o' }),
    )
    const records: AttemptRecord[] = []
    const error = await callModel({
      models: [adapter],
      request: { messages: [user('hi')], maxTokens: 16 },
      retry: { maxAttempts: 3, delay: FAST_RETRIES },
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ errorKind: 'network', decision: 'fail', status: 0 })
    const cause = (error as ModelUnavailableError).lastCause
    expect(cause).toMatchObject({ kind: 'network', retryable: false, status: 0 })
    expect((cause as Error).message).toMatch(
      /the HTTP client refused to send the request \(invalid authorization header\); not retried/,
    )
    expect(fake.requests).toHaveLength(0)
  })
})
