import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { createAdapter } from '../../src/adapters/createAdapter.js'
import { gemini } from '../../src/adapters/gemini.js'
import type { AdapterOptions } from '../../src/adapters/ModelAdapter.js'
import {
  type OpenAICompatibleOptions,
  openAICompatible,
} from '../../src/adapters/openAICompatible.js'
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
// A base path every adapter's convention takes (anthropic() refuses one
// ending in /v1: baseURLConvention.test.ts).
const base = { baseURL: 'http://127.0.0.1:1/llm', apiKey: 'sk-fine', model: 'm' }
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

function refusal(options: unknown, make = factories[0][1]): Error {
  const error = thrownBy(() => make(options as AdapterOptions))
  expect(error).toBeInstanceOf(TypeError)
  return error as Error
}

describe('an adapter’s baseURL, model, keys and dialect are checked when it is made', () => {
  it.each([
    [
      'no scheme',
      'api.example.com/v1',
      /does not parse as a URL \(no http:\/\/ or https:\/\/ before the host\?\)/,
    ],
    ['words', 'not a url', /does not parse as a URL/],
    ['a colon missing', 'http//x/v1', /does not parse as a URL/],
    ['a host:port without scheme', 'myhost:8080/v1', /no http:\/\/ or https:\/\/ before the host/],
    ['another scheme', 'ftp://127.0.0.1/v1', /its scheme is not http: or https:/],
    ['an empty string', '', /does not parse as a URL/],
  ])('a baseURL with %s is refused, naming the option, the value not shown', (_, baseURL, why) => {
    for (const [, make] of factories) {
      const error = refusal({ ...base, baseURL }, make)
      expect(error.message).toMatch(
        /^\S+ adapter: baseURL must be an absolute http:\/\/ or https:\/\/ URL/,
      )
      expect(error.message).toMatch(why)
      if (baseURL !== '') expect(error.message).not.toContain(baseURL)
    }
  })

  it('a missing or non-string baseURL is refused, naming it (it crashed reading `replace`)', () => {
    const { baseURL: _, ...noBaseURL } = base
    expect(refusal(noBaseURL).message).toBe(
      'openai adapter: baseURL must be an absolute http:// or https:// URL (https://api.openai.com/v1, http://localhost:8080/v1), got undefined',
    )
    expect(refusal({ ...base, baseURL: 5 }, factories[1][1]).message).toMatch(
      /^anthropic adapter: baseURL must be .*, got a number$/,
    )
    // It read "got a object".
    expect(refusal({ ...base, baseURL: new URL('http://127.0.0.1:1/v1') }).message).toMatch(
      /, got a URL object \(pass its href\)$/,
    )
    expect(refusal({ ...base, baseURL: {} }).message).toMatch(/, got an object$/)
  })

  it('a missing, empty or non-string model is refused (it was sent as no model at all)', () => {
    const { model: _, ...noModel } = base
    for (const [, make] of factories) {
      expect(refusal(noModel, make).message).toMatch(
        /^\S+ adapter: model must be the model id, a non-empty string, got undefined$/,
      )
      expect(refusal({ ...base, model: 5 }, make).message).toMatch(/model must be .*, got 5$/)
      expect(refusal({ ...base, model: '' }, make).message).toMatch(/model must be .*, got ''/)
    }
  })

  it('apiKey and apiKeys together are refused: one of them was dropped without a word', () => {
    const error = refusal({ ...base, apiKeys: ['sk-other'] })
    expect(error.message).toMatch(/^openai adapter: apiKey and apiKeys are both set; pick one/)
  })

  it('an unknown dialect is refused naming the known ones (it crashed reading `name`)', () => {
    const make = (dialect: unknown) =>
      thrownBy(() =>
        openAICompatible({ ...base, dialect } as unknown as OpenAICompatibleOptions),
      ) as Error
    for (const dialect of ['mistral', 'anthropic', 5]) {
      expect(make(dialect)).toBeInstanceOf(TypeError)
      expect(make(dialect).message).toMatch(
        /^openAICompatible: dialect must be one of 'openai', 'deepseek', 'qwen', 'ernie', 'doubao'/,
      )
    }
    for (const dialect of ['openai', 'deepseek', 'qwen', 'ernie', 'doubao', undefined]) {
      expect(make(dialect)).toBeUndefined()
    }
  })

  it('no options object is refused naming the factory', () => {
    expect(refusal(undefined, factories[2][1]).message).toBe(
      'gemini adapter: options must be an object ({ baseURL, model, apiKey, … }), got undefined',
    )
    expect(refusal(null).message).toMatch(/^openAICompatible: options must be an object/)
  })

  it('http and https base URLs, with a port, a path or a trailing slash, are accepted', () => {
    for (const [, make] of factories) {
      for (const baseURL of [
        'https://proxy.example/llm',
        'http://localhost:8080/llm/',
        'HTTPS://EXAMPLE.com',
        'http://[::1]:9000',
      ]) {
        expect(thrownBy(() => make({ ...base, baseURL }))).toBeUndefined()
      }
    }
  })
})

describe('a URL the HTTP client cannot parse is refused when sending, not retried', () => {
  it('one attempt, not sent, no retry-budget token, and the next model answers', async () => {
    const backupFake = await fakes.start({ dialect: 'openai', reply: reply.text('backup') })
    // A path of the dialect's that no URL parses after the base URL: a port twice.
    const broken: Dialect = {
      ...dialects.openai,
      buildRequest(request, model) {
        return { ...dialects.openai.buildRequest(request, model), path: ':99/chat' }
      },
    }
    const primary = fakes.adapter(
      createAdapter(broken, { ...base, baseURL: 'http://127.0.0.1:1', name: 'primary' }),
    )
    const backup = fakes.adapter(
      openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'sk-2', model: 'b', name: 'backup' }),
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
    expect(answer.text).toBe('backup')
    expect(records.map((r) => [r.model, r.errorKind, r.decision, r.sent])).toEqual([
      ['m', 'network', 'fallback', false],
      ['b', undefined, 'success', undefined],
    ])
    expect(budgets.forProvider(primary).tokens).toBe(budgets.forProvider(backup).tokens)
  })

  it('with no other model: a ModelUnavailableError whose cause says the client refused it', async () => {
    const broken: Dialect = {
      ...dialects.openai,
      buildRequest(request, model) {
        return { ...dialects.openai.buildRequest(request, model), path: ':99/chat' }
      },
    }
    const adapter = fakes.adapter(createAdapter(broken, { ...base, baseURL: 'http://127.0.0.1:1' }))
    const error = await callModel({
      models: [adapter],
      request: { messages: [user('hi')], maxTokens: 16 },
      retry: { maxAttempts: 3, delay: FAST_RETRIES },
      limits: { admission: false },
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    const cause = (error as ModelUnavailableError).lastCause
    expect(cause).toMatchObject({ kind: 'network', retryable: false, status: 0 })
    expect((cause as Error).message).toMatch(
      /the HTTP client refused to send the request \(Invalid URL\); not retried/,
    )
  })
})
