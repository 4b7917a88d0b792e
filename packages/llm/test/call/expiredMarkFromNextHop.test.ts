// proposed: packages/llm/test/call/expiredMarkFromNextHop.test.ts
import { Deadline, isDeadlineExceeded, isExpiryOf } from '@hourglass/core'
import { faultServer, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes } from './support/fakes.js'

const fakes = useFakes()
const closing: Array<() => Promise<void>> = []
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()))
})

/** What @hourglass/gateway (or an Express app with deadline()) answers when the budget it was sent runs out: 100 ms before its end. */
async function spentHop() {
  const hop = await faultServer((req) => ({
    type: 'respond',
    status: 504,
    delayMs: Math.max(0, Number(req.headers['x-deadline-remaining-ms']) - 100),
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'x-deadline-expired': '1',
      'x-should-retry': 'false',
    },
    body: JSON.stringify({
      error: {
        message: 'the request ran out of time (deadline exceeded)',
        type: 'server_error',
        param: null,
        code: 'deadline_exceeded',
      },
    }),
  }))
  closing.push(() => hop.close())
  return openAICompatible({ baseURL: `${hop.url}/v1`, apiKey: 'k', model: 'm' })
}

describe('a 504 with x-deadline-expired: 1 from the next hop', () => {
  it("is the call's deadline running out, not a model failure", async () => {
    const deadline = Deadline.after(400, { name: 'model' })
    try {
      const error = await callModel({
        models: [await spentHop()],
        request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 20 },
        deadline,
      }).catch((e: unknown) => e)
      expect(isDeadlineExceeded(error)).toBe(true)
      expect(isExpiryOf(error, deadline)).toBe(true)
      expect((error as { slice?: string }).slice).toBe('model')
    } finally {
      deadline.dispose()
    }
  })

  it('sends nothing to a fallback once the budget is reported spent', async () => {
    const fallbackFake = await fakes.start({ reply: reply.text('late') })
    const deadline = Deadline.after(400, { name: 'model' })
    try {
      const error = await callModel({
        models: [
          await spentHop(),
          fakes.adapter(
            openAICompatible({ baseURL: fallbackFake.baseURL, apiKey: 'k', model: 'fake-model' }),
          ),
        ],
        request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 20 },
        deadline,
      }).catch((e: unknown) => e)
      expect(isDeadlineExceeded(error)).toBe(true)
      expect(fallbackFake.requests).toHaveLength(0)
    } finally {
      deadline.dispose()
    }
  })
})
