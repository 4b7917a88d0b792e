import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

// Anthropic's `redacted_thinking` (reasoning its safety systems encrypted)
// comes whole, in its `content_block_start`, once the model has thought: it
// is output the provider generated and bills, as thinking deltas are. It
// did not stop the first-token timer: an answer whose reasoning came
// redacted failed as "no token within firstTokenTimeoutMs" while its text
// was on the way — not resent, and a fallback asked (and billed) — where
// the same answer with its thinking in the clear succeeded.
// Real time: the provider's pauses are what the timer measures.

const fakes = useFakes()
const servers: Server[] = []
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((s) => {
      s.closeAllConnections()
      return new Promise((resolve) => s.close(resolve))
    }),
  )
})

const event = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

/** Thinks (its reasoning redacted, or in the clear) at once, then answers after `textAfterMs`. */
async function provider(redacted: boolean, textAfterMs: number): Promise<string> {
  const server = createServer((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write(
      event('message_start', {
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          content: [],
          model: 'claude',
          usage: { input_tokens: 5, output_tokens: 1 },
        },
      }),
    )
    if (redacted) {
      res.write(
        event('content_block_start', {
          index: 0,
          content_block: { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
        }),
      )
    } else {
      res.write(
        event('content_block_start', {
          index: 0,
          content_block: { type: 'thinking', thinking: '' },
        }),
      )
      res.write(
        event('content_block_delta', {
          index: 0,
          delta: { type: 'thinking_delta', thinking: 'Hmm.' },
        }),
      )
      res.write(
        event('content_block_delta', {
          index: 0,
          delta: { type: 'signature_delta', signature: 'sig' },
        }),
      )
    }
    res.write(event('content_block_stop', { index: 0 }))
    setTimeout(() => {
      res.write(
        event('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
      )
      res.write(
        event('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Answer.' } }),
      )
      res.write(event('content_block_stop', { index: 1 }))
      res.write(
        event('message_delta', {
          delta: { stop_reason: 'end_turn' },
          usage: { output_tokens: 30 },
        }),
      )
      res.end(event('message_stop', {}))
    }, textAfterMs)
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('a redacted thinking block is a first token', () => {
  it.each([true, false])('redacted %s: the answer after it is not timed out', async (redacted) => {
    const url = await provider(redacted, 600)
    const model = fakes.adapter(anthropic({ baseURL: url, apiKey: 'sk', model: 'claude' }))
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      firstTokenTimeoutMs: 300,
      limits: { admission: false },
      request: { messages: [user('hi')], maxTokens: 64, stream: true },
      onAttempt: (r) => records.push(r),
    })
    const types: string[] = []
    for await (const e of stream) types.push(e.type)
    const answer = await stream.result
    // Before (redacted): ModelUnavailableError, "timeout (HTTP 200) is not retryable".
    expect(answer.text).toBe('Answer.')
    expect(types).toEqual(['thinking', 'signature', 'text', 'finish'].slice(redacted ? 1 : 0))
    expect(records.map((r) => r.decision)).toEqual(['success'])
  })
})
