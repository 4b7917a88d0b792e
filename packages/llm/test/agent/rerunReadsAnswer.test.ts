import { type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import type { SideEffectStore } from '../../src/agent/SideEffectStore.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

// Each tool ran under a key of its arguments, and a rerun of the operation
// asked the model again: a model words an email anew each time it is asked
// (temperature > 0), so the rerun's call had other arguments, another key,
// and the email was sent twice — the one thing the key was for.

const fakes = useFakes()

/**
 * A model that asks for `send_email` with a body worded anew on every ask
 * (`asks` counts them), then answers once it has read the tool's result;
 * `failAfterTool` fails that second turn while it is true (a 400: not retried).
 */
function wordingModel() {
  const state = { asks: 0, failAfterTool: true }
  const script = (request: RecordedRequest) => {
    if (JSON.stringify(request.body).includes('msg-')) {
      if (state.failAfterTool) {
        return reply.error(400, { error: { message: 'bad turn', type: 'invalid_request_error' } })
      }
      return reply.text('Sent the invoice to Ana.')
    }
    state.asks++
    const body =
      state.asks === 1 ? 'Hi Ana, your invoice is attached.' : 'Hello Ana, here is your invoice.'
    return reply.text('', {
      toolCalls: [{ name: 'send_email', arguments: { to: 'ana@example.com', body } }],
    })
  }
  return { state, script }
}

function agent(
  model: Parameters<typeof callModel>[0]['models'][number],
  store: SideEffectStore,
  sent: string[],
  options: { operationId?: string; messages?: ChatMessage[] } = {},
) {
  return runTurns({
    operationId: options.operationId ?? 'invoice-42',
    messages: options.messages ?? [user('Email Ana her invoice.')],
    store,
    call: (messages, { idempotencyKey, signal }) =>
      callModel({
        models: [model],
        request: { messages, maxTokens: 64 },
        idempotencyKey,
        signal,
        limits: { admission: false },
      }),
    tools: {
      send_email: (args) => {
        sent.push((args as { body: string }).body)
        return { messageId: `msg-${sent.length}` }
      },
    },
  })
}

describe('runTurns: a rerun of the operation reads the answers its first run acted on', () => {
  for (const dialect of ['openai', 'anthropic', 'gemini'] as const) {
    it(`${dialect}: the email is sent once although the model would word it anew`, async () => {
      const { state, script } = wordingModel()
      const fake = await fakes.start({ dialect, reply: script })
      const model = fakes.adapterFor(dialect, fake.baseURL, 'm')
      const store = new MemorySideEffectStore()
      const sent: string[] = []

      await expect(agent(model, store, sent)).rejects.toMatchObject({
        name: 'RequestRejectedError',
      })
      expect(sent).toEqual(['Hi Ana, your invoice is attached.'])

      state.failAfterTool = false
      const rerun = await agent(model, store, sent)
      expect(rerun.response.text).toBe('Sent the invoice to Ana.')
      // Sent once (it was sent twice, the second time worded "Hello Ana, …").
      expect(sent).toEqual(['Hi Ana, your invoice is attached.'])
      expect(JSON.stringify(rerun.messages)).toContain('msg-1')
      // Turn 1 was not asked again: the first run's answer was read.
      expect(state.asks).toBe(1)
      expect(fake.requests).toHaveLength(3)
    })
  }

  it('two runs of one operation at once share the model’s answer: one ask, one email', async () => {
    const { state, script } = wordingModel()
    state.failAfterTool = false
    const fake = await fakes.start({ dialect: 'openai', reply: script })
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    const store = new MemorySideEffectStore()
    const sent: string[] = []
    const [a, b] = await Promise.all([agent(model, store, sent), agent(model, store, sent)])
    expect(a.response.text).toBe('Sent the invoice to Ana.')
    expect(b.response.text).toBe('Sent the invoice to Ana.')
    expect(state.asks).toBe(1)
    expect(sent).toEqual(['Hi Ana, your invoice is attached.'])
  })

  it('another history under the same operation asks the model: no answer of another conversation is read', async () => {
    const { state, script } = wordingModel()
    state.failAfterTool = false
    const fake = await fakes.start({ dialect: 'openai', reply: script })
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    const store = new MemorySideEffectStore()
    const sent: string[] = []
    await agent(model, store, sent)
    await agent(model, store, sent, { messages: [user('Email Ana her receipt.')] })
    expect(state.asks).toBe(2)
    expect(sent).toEqual(['Hi Ana, your invoice is attached.', 'Hello Ana, here is your invoice.'])
  })

  it('a store that cannot be read still lets a run without tool calls answer', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('Hello.'))
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    const down: SideEffectStore = {
      get: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.7:6379')),
      set: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.7:6379')),
    }
    const result = await agent(model, down, [], { operationId: 'hello-1' })
    expect(result.response.text).toBe('Hello.')
    expect(fake.requests).toHaveLength(1)
  })
})
