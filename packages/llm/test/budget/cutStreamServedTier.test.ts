import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'

// Standard $1 / $10 per token, priority twice that: a call with no
// `service_tier` (OpenAI's `auto`) is held at priority, the dearest listed.
const price = {
  inputPerMTok: 1_000_000,
  outputPerMTok: 10_000_000,
  serviceTiers: { priority: { inputPerMTok: 2_000_000, outputPerMTok: 20_000_000 } },
}

const servers: http.Server[] = []
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    s.close()
  }
})

/** A server that writes `frames` on a 200 event stream, then drops the connection. */
async function cutAfter(frames: string): Promise<string> {
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(frames, () => setImmediate(() => res.destroy()))
    })
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const sse = (type: string, data: object) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

async function cutCall(model: Parameters<typeof callModel>[0]['models'][number]) {
  const budget = new CostBudget({ limitUsd: 1e12, prices: { m: price } })
  const records: AttemptRecord[] = []
  const stream = callModel({
    models: [model],
    deadline: Deadline.after(10_000),
    request: { messages: [{ role: 'user', content: 'hello' }], maxTokens: 100, stream: true },
    retry: { maxAttempts: 1, budgets: false },
    limits: { budget, admission: false },
    onAttempt: (r) => records.push(r),
  })
  await stream.result.catch(() => {})
  return { budget, records }
}

describe('a stream cut after it named the tier serving it', () => {
  it('Anthropic: charged at message_start usage.service_tier, not the dearest tier held', async () => {
    const baseURL = await cutAfter(
      sse('message_start', {
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'm',
          content: [],
          stop_reason: null,
          usage: { input_tokens: 1000, output_tokens: 1, service_tier: 'standard' },
        },
      }) +
        sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
        sse('content_block_delta', {
          index: 0,
          delta: { type: 'text_delta', text: 'hello world' },
        }),
    )
    const { budget, records } = await cutCall(anthropic({ baseURL, apiKey: 'k', model: 'm' }))
    expect(records.at(-1)?.decision).toBe('fail')
    // 1000 input tokens by message_start, 'hello world' (11 characters) is 3 output tokens.
    const standard = 1000 * 1 + 3 * 10
    expect(budget.spentUsd).toBeCloseTo(standard, 6) // was 2060: at priority
    expect(records.at(-1)?.costUsd).toBeCloseTo(standard, 6)
  })

  it('OpenAI: charged at the chunks service_tier when cut before its usage', async () => {
    const chunk = {
      id: 'c1',
      object: 'chat.completion.chunk',
      model: 'm',
      service_tier: 'default',
      choices: [{ index: 0, delta: { content: 'x'.repeat(400) }, finish_reason: null }],
    }
    const baseURL = await cutAfter(`data: ${JSON.stringify(chunk)}\n\n`)
    const { budget } = await cutCall(openAICompatible({ baseURL, apiKey: 'k', model: 'm' }))
    // The prompt estimate (ceil(5 / 4) + 4 = 6 tokens) and 400 characters delivered (100 tokens).
    const standard = 6 * 1 + 100 * 10
    expect(budget.spentUsd).toBeCloseTo(standard, 6) // was 2012: at priority
  })
})
