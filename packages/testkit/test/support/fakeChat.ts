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
