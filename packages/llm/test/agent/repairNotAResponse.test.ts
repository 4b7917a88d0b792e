import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { type RepairableCall, withRepair } from '../../src/agent/withRepair.js'
import { callModel } from '../../src/call/callModel.js'
import type { ModelStream } from '../../src/call/ModelStream.js'
import type { ChatResponse } from '../../src/types.js'
import { useFakes } from '../call/support/fakes.js'

// `call` returning a streamed callModel's ModelStream (`stream: useStream`,
// a boolean the overloads type as a promise of the answer) was handed to
// `validate`, whose parse failed on it as on a wrong answer; the repair turn
// then read `response.content.filter` of the stream: a bare "Cannot read
// properties of undefined (reading 'filter')", and the generation it started
// went on, billed, with nobody reading it. runTurns says so; withRepair now
// does too.

const fakes = useFakes()
const history = () => [{ role: 'user' as const, content: 'How old is Ada? JSON {"age": n}' }]
const parseAge = (response: ChatResponse) => JSON.parse(response.text) as unknown

describe('withRepair with a call that does not resolve to a ChatResponse', () => {
  it('a ModelStream: a TypeError saying to return its .result, validate not run, the stream cancelled', async () => {
    // The provider sends its headers, then keeps generating (never a token, never an end).
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.hang({ afterHeaders: true }))
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'fake-model' }),
    )
    let stream: ModelStream | undefined
    let validated = 0
    const call = (messages: Parameters<RepairableCall>[0]) => {
      stream = callModel({
        models: [model],
        request: { messages, maxTokens: 50, stream: true },
        limits: { admission: false },
        deadline: false,
      })
      return stream
    }
    const error = await withRepair(
      call as unknown as RepairableCall,
      (response) => {
        validated++
        return parseAge(response)
      },
      { messages: history() },
    ).catch((e: unknown) => e)

    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(/^withRepair: call must resolve to a ChatResponse/)
    expect((error as Error).message).toMatch(/\.result/)
    expect((error as Error).message).toMatch(/stream: true/)
    expect(validated).toBe(0)
    // The stream nobody will read is told to stop, with that error as its reason.
    await expect(stream?.result).rejects.toBe(error)
    // Cancelled at once: sent or not by then, nothing is left generating upstream.
    await expect.poll(() => fake.inFlight).toBe(0)
    expect(fake.requests.length).toBeLessThanOrEqual(1)
  })

  it('anything else: a TypeError naming what call must resolve to, before validate', async () => {
    for (const value of [undefined, null, 'the answer', { text: '{"age":36}' }]) {
      let validated = 0
      const error = await withRepair(
        async () => value as unknown as ChatResponse,
        () => {
          validated++
          return 36
        },
        { messages: history() },
      ).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toMatch(/^withRepair: call must resolve to a ChatResponse/)
      expect((error as Error).message).not.toMatch(/stream/)
      expect(validated).toBe(0)
    }
  })

  it('a repair turn that resolves to no answer is named as that repair', async () => {
    let calls = 0
    const error = await withRepair(
      async () => {
        calls++
        if (calls === 1) {
          return {
            id: 'r',
            model: 'm',
            provider: 'p',
            content: [{ type: 'text', text: 'not json' }],
            text: 'not json',
            finishReason: 'stop',
            usage: { inputTokens: 1, outputTokens: 1 },
          } satisfies ChatResponse
        }
        return undefined as unknown as ChatResponse
      },
      parseAge,
      { messages: history() },
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(/undefined on repair 1$/)
  })
})
