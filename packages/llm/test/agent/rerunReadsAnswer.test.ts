import { type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { type RunTurnsOptions, runTurns } from '../../src/agent/runTurns.js'
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

/**
 * The wording model (`failAfterTool` as given) behind a fake of `dialect`,
 * an adapter to it, an empty store, and the email bodies sent.
 */
async function invoiceSetup(dialect: 'openai' | 'anthropic' | 'gemini', failAfterTool = true) {
  const { state, script } = wordingModel()
  state.failAfterTool = failAfterTool
  const fake = await fakes.start({ dialect, reply: script })
  const model = fakes.adapterFor(dialect, fake.baseURL, 'm')
  return { state, fake, model, store: new MemorySideEffectStore(), sent: [] as string[] }
}

type Model = Parameters<typeof callModel>[0]['models'][number]

/** A run of `options`' operation over `model`, its answers remembered in `store`. */
function run(
  model: Model,
  store: SideEffectStore,
  options: Pick<RunTurnsOptions, 'operationId' | 'messages' | 'tools' | 'deadline' | 'maxTurns'>,
) {
  return runTurns({
    ...options,
    store,
    call: (messages, { idempotencyKey, signal }) =>
      callModel({
        models: [model],
        request: { messages, maxTokens: 64 },
        idempotencyKey,
        signal,
        limits: { admission: false },
      }),
  })
}

/** The invoice run: `send_email` puts each body it sends in `sent`. */
function agent(
  model: Model,
  store: SideEffectStore,
  sent: string[],
  {
    operationId = 'invoice-42',
    messages = [user('Email Ana her invoice.')],
  }: { operationId?: string; messages?: ChatMessage[] } = {},
) {
  return run(model, store, {
    operationId,
    messages,
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
      const { state, fake, model, store, sent } = await invoiceSetup(dialect)

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
    const { state, model, store, sent } = await invoiceSetup('openai', false)
    const [a, b] = await Promise.all([agent(model, store, sent), agent(model, store, sent)])
    expect(a.response.text).toBe('Sent the invoice to Ana.')
    expect(b.response.text).toBe('Sent the invoice to Ana.')
    expect(state.asks).toBe(1)
    expect(sent).toEqual(['Hi Ana, your invoice is attached.'])
  })

  it('another history under the same operation asks the model: no answer of another conversation is read', async () => {
    const { state, model, store, sent } = await invoiceSetup('openai', false)
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

describe('runTurns: only an answer whose tool calls run is remembered', () => {
  /** A run of one operation whose model answers in text at once (`tools` as given). */
  function textRun(
    model: Model,
    store: SideEffectStore,
    {
      tools = { lookup: () => 'ticket 7: printer on fire' },
      maxTurns,
    }: { tools?: Record<string, () => unknown>; maxTurns?: number } = {},
  ) {
    return run(model, store, {
      operationId: 'summary-7',
      deadline: false,
      messages: [user('Summarise the ticket.')],
      maxTurns,
      tools,
    })
  }

  it('a final answer the caller rejected is not replayed: the retry asks the model again', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('I cannot help with that.', { finishReason: 'content_filter' }))
    fake.enqueue(reply.text('Summary: the printer is on fire.'))
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    const store = new MemorySideEffectStore()
    const first = await textRun(model, store)
    expect(first.response.finishReason).toBe('content_filter')
    const retry = await textRun(model, store)
    expect(retry.response.text).toBe('Summary: the printer is on fire.')
    expect(fake.requests).toHaveLength(2)
  })

  it('the last turn is not replayed: a retry after MaxTurnsExceededError asks the model again', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const lookup = reply.text('', { toolCalls: [{ name: 'lookup', arguments: {} }] })
    fake.enqueue(lookup)
    fake.enqueue(lookup) // turn 2, the last: its call is left pending
    fake.enqueue(reply.text('Found: the printer is on fire.')) // the retry's turn 2
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    const store = new MemorySideEffectStore()
    await expect(textRun(model, store, { maxTurns: 2 })).rejects.toMatchObject({
      code: 'MAX_TURNS_EXCEEDED',
    })
    // Turn 1's answer (its tool ran) is read; turn 2 is asked again.
    const retry = await textRun(model, store, { maxTurns: 2 })
    expect(retry.response.text).toBe('Found: the printer is on fire.')
    expect(fake.requests).toHaveLength(3)
  })

  it('a run without tools never waits on the store: one that never answers holds nothing', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('Hello.'))
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    let reads = 0
    const hung: SideEffectStore = {
      get: () => {
        reads++
        return new Promise(() => {})
      },
      set: () => new Promise(() => {}),
    }
    const result = await textRun(model, hung, { tools: {} })
    expect(result.response.text).toBe('Hello.')
    expect(reads).toBe(0)
  })
})
