import type { ModelAdapter, SendResult } from '../../../src/adapters/ModelAdapter.js'

/** One short request ("hi", 8 tokens, no deadline, never aborted) through `adapter`, with `apiKey`. */
export function sendHi(adapter: ModelAdapter, apiKey: string): Promise<SendResult> {
  return adapter.send(
    { messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
    {
      apiKey,
      idempotencyKey: 'op-1',
      deadline: undefined,
      signal: new AbortController().signal,
    },
  )
}
