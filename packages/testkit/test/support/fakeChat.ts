import { afterEach } from 'vitest'
import {
  type FakeProvider,
  type FakeProviderOptions,
  startFakeProvider,
} from '../../src/providers/index.js'

/**
 * Registers an `afterEach` that closes the fake the returned function last
 * started, and returns that function: `startFakeProvider`, kept for closing.
 * Call it once, at a test file's top level.
 */
export function useFakeProvider(): (options: FakeProviderOptions) => Promise<FakeProvider> {
  let fake: FakeProvider | undefined
  afterEach(async () => {
    await fake?.close()
    fake = undefined
  })
  return async (options) => {
    fake = await startFakeProvider(options)
    return fake
  }
}

/**
 * A POST to `${base}/chat/completions` with bearer `key`, asking `model` for
 * an answer to one user message `content`; `body`'s fields are added to (or
 * override) the request's.
 */
export function chatCompletions(request: { key: string; model: string; content: string }) {
  return (base: string, body: Record<string, unknown> = {}) =>
    fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${request.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: request.model,
        messages: [{ role: 'user', content: request.content }],
        ...body,
      }),
    })
}

/**
 * A POST to `${base}/v1/messages` as Anthropic's client sends it: one user
 * message `hi` to `model` with `max_tokens`; `body`'s fields are added to (or
 * override) the request's, `headers` to its headers.
 */
export function postAnthropicMessages(
  base: string,
  body: Record<string, unknown> = {},
  request: { model: string; maxTokens: number; headers?: Record<string, string> },
) {
  return fetch(`${base}/v1/messages`, {
    method: 'POST',
    headers: {
      'x-api-key': 'sk-ant-test',
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
      ...request.headers,
    },
    body: JSON.stringify({
      model: request.model,
      max_tokens: request.maxTokens,
      messages: [{ role: 'user', content: 'hi' }],
      ...body,
    }),
  })
}
