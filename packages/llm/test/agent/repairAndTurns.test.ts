import type { RecordedRequest } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import { withRepair } from '../../src/agent/withRepair.js'
import { callModel } from '../../src/call/callModel.js'
import {
  isMaxTurnsExceeded,
  type MaxTurnsExceededError,
} from '../../src/errors/MaxTurnsExceededError.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()

describe('call vs parse: repair turns', () => {
  it('an answer that fails validation becomes a follow-up turn carrying the validation error, not a resend', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.text('{"city":"Paris"}'),
      reply.text('{"city":"Paris","population":2102650}'),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const schema = z.object({ city: z.string(), population: z.number() })
    const result = await withRepair(
      (messages) => callModel({ models: [model], request: { messages, maxTokens: 64 } }),
      (response) => schema.parse(JSON.parse(response.text)),
      { messages: [user('Give me the city and population of the French capital as JSON.')] },
    )
    expect(result.value).toEqual({ city: 'Paris', population: 2102650 })
    expect(result.repairs).toBe(1)
    expect(fake.requests).toHaveLength(2)
    const second = fake.requests[1]?.body as { messages: Array<{ role: string; content: string }> }
    expect(second.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
    expect(second.messages[1]?.content).toBe('{"city":"Paris"}')
    expect(second.messages[2]?.content).toMatch(/failed validation/)
    expect(second.messages[2]?.content).toMatch(/population/)
  })
})

describe('runTurns', () => {
  function agentScript() {
    // Turn 1 asks for the email; turn 2 fails twice (then the run is retried); then the model wraps up.
    let turn2Failures = 0
    return (request: RecordedRequest) => {
      const messages = (request.body as { messages: Array<{ role: string }> }).messages
      if (!messages.some((m) => m.role === 'tool')) {
        return reply.text('', {
          toolCalls: [
            { name: 'send_email', arguments: { to: 'ana@example.com', subject: 'Invoice' } },
          ],
        })
      }
      if (turn2Failures < 1) {
        turn2Failures++
        return reply.error(503, { error: { message: 'down', type: 'server_error', code: null } })
      }
      return reply.text('Sent the invoice to Ana.')
    }
  }

  it('a retried agent turn does not send the email twice', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: agentScript() })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const store = new MemorySideEffectStore()
    const sent: unknown[] = []
    // The 503 cools the provider down; a short cooldown keeps the rerun from
    // waiting the default 5–10 s for it (what is tested is the side effect).
    const admission = new Admission({ cooldownMs: () => 20 })
    const run = () =>
      runTurns({
        operationId: 'ticket-4711',
        messages: [user('Email Ana the invoice.')],
        // maxAttempts 1: the 503 on turn 2 fails the whole run, as a crash would.
        call: (messages, { idempotencyKey }) =>
          callModel({
            models: [model],
            request: { messages, maxTokens: 64 },
            idempotencyKey,
            retry: { maxAttempts: 1 },
            limits: { admission },
          }),
        tools: {
          send_email: (args, { key }) => {
            sent.push({ args, key })
            return { messageId: `msg-${sent.length}` }
          },
        },
        store,
      })
    const first = await run().catch((e: unknown) => e)
    expect(isModelUnavailable(first)).toBe(true)
    expect(sent).toHaveLength(1)

    const second = await run()
    expect(second.response.text).toBe('Sent the invoice to Ana.')
    expect(sent).toHaveLength(1) // the retried turn found the first run's result
    const toolMessage = second.messages.find((m) => m.role === 'tool')
    expect(JSON.stringify(toolMessage?.content)).toContain('msg-1')
    // Turn 1, turn 2 (503), turn 2 again: the rerun reads the answer turn 1
    // acted on, not a new one whose tool calls could differ.
    expect(fake.requests).toHaveLength(3)
  })

  it('refuses a NaN maxTurns, naming it, before calling the model', async () => {
    let calls = 0
    const attempt = runTurns({
      operationId: 'op-nan',
      messages: [user('hi')],
      maxTurns: Number.NaN,
      call: async () => {
        calls++
        throw new Error('not reached')
      },
      tools: {},
    })
    await expect(attempt).rejects.toThrow(RangeError)
    await expect(attempt).rejects.toThrow(/runTurns: maxTurns must be a number/)
    expect(calls).toBe(0)
  })

  it('refuses a maxTurns below 1 before calling the model, rather than making one call anyway', async () => {
    for (const maxTurns of [0, -3, 0.5]) {
      let calls = 0
      const error = await runTurns({
        operationId: 'op-zero',
        messages: [user('hi')],
        maxTurns,
        call: async () => {
          calls++
          throw new Error('not reached')
        },
        tools: {},
      }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(RangeError)
      expect(String(error)).toMatch(/runTurns: maxTurns must be a number ≥ 1/)
      expect(calls).toBe(0)
    }
  })

  it('refuses a missing or empty operationId: runs without one shared every tool key, so one conversation got another’s remembered result', async () => {
    const store = new MemorySideEffectStore()
    const sentTo: string[] = []
    const run = (operationId: unknown, to: string) =>
      runTurns({
        operationId: operationId as string,
        messages: [user(`email ${to}`)],
        store,
        call: async (messages) => ({
          id: 'r',
          model: 'm',
          provider: 'stub',
          content:
            messages.at(-1)?.role === 'tool'
              ? [{ type: 'text', text: 'done' }]
              : [{ type: 'tool_call', id: 'c1', name: 'send', arguments: { template: 'welcome' } }],
          text: '',
          finishReason: 'stop',
          usage: { inputTokens: 1, outputTokens: 1 },
        }),
        tools: {
          send: () => {
            sentTo.push(to)
            return 'sent'
          },
        },
      }).catch((e: unknown) => e)
    for (const missing of [undefined, '']) {
      const error = await run(missing, 'ana')
      expect(error).toBeInstanceOf(TypeError)
      expect(String(error)).toMatch(/runTurns: operationId must be a non-empty string/)
    }
    // Two conversations with their own ids each run their tool.
    await run('conversation-1', 'ana')
    await run('conversation-2', 'bob')
    expect(sentTo).toEqual(['ana', 'bob'])
  })

  it('maxTurns is a hard breaker for a model that never stops calling tools: the last turn’s tools are not run', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('', { toolCalls: [{ name: 'search', arguments: { q: 'more' } }] }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const searched: number[] = []
    const lastTurns: boolean[] = []
    const error = await runTurns({
      operationId: 'loop',
      messages: [user('Research everything.')],
      call: (messages, { lastTurn }) => {
        lastTurns.push(lastTurn)
        return callModel({
          models: [model],
          request: { messages, maxTokens: 64 },
          retry: { delay: FAST_RETRIES },
        })
      },
      tools: {
        search: (_args, { turn }) => {
          searched.push(turn)
          return 'nothing new'
        },
      },
      maxTurns: 3,
    }).catch((e: unknown) => e)
    expect(isMaxTurnsExceeded(error)).toBe(true)
    expect(fake.requests).toHaveLength(3)
    expect(lastTurns).toEqual([false, false, true])
    // The third turn's search would have run for nobody: no model call reads its result.
    expect(searched).toEqual([1, 2])
    const history = (error as MaxTurnsExceededError).messages
    expect(history.at(-1)).toMatchObject({ role: 'assistant' })
    expect(history.filter((m) => m.role === 'tool')).toHaveLength(2)
  })
})
