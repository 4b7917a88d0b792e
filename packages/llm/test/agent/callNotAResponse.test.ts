import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { type RunTurnsOptions, runTurns } from '../../src/agent/runTurns.js'
import { callModel } from '../../src/call/callModel.js'
import type { ModelStream } from '../../src/call/ModelStream.js'
import type { ChatResponse } from '../../src/types.js'
import { useFakes } from '../call/support/fakes.js'

// `call` returning a streamed callModel's ModelStream (not a promise of the
// answer) failed with a bare "Cannot read properties of undefined (reading
// 'filter')", and the generation it started went on after the run had
// rejected: nothing told it to stop.

const fakes = useFakes()
const history = () => [{ role: 'user' as const, content: 'weather?' }]

describe('runTurns with a call that does not resolve to a ChatResponse', () => {
  it('a ModelStream: a TypeError saying to return its .result, and the generation it started is aborted', async () => {
    // The provider sends its headers, then keeps generating (never a token, never an end).
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.hang({ afterHeaders: true }))
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'fake-model' }),
    )
    let stream: ModelStream | undefined
    let given: AbortSignal | undefined
    const call = (
      messages: Parameters<RunTurnsOptions['call']>[0],
      info: { signal: AbortSignal },
    ) => {
      given = info.signal
      stream = callModel({
        models: [model],
        request: { messages, maxTokens: 50, stream: true },
        signal: info.signal,
        limits: { admission: false },
      })
      return stream
    }
    const error = await runTurns({
      operationId: 'op-stream',
      messages: history(),
      tools: {},
      call: call as unknown as RunTurnsOptions['call'],
      deadline: false,
    }).catch((e: unknown) => e)

    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(/call must resolve to a ChatResponse/)
    expect((error as Error).message).toMatch(/\.result/)
    expect((error as Error).message).toMatch(/stream: true/)
    // The signal the call was handed says the run is over, and why…
    expect(given?.aborted).toBe(true)
    expect(given?.reason).toBe(error)
    // …so the stream it started ends instead of generating on.
    await expect(stream?.result).rejects.toBeDefined()
  })

  it('a ModelStream from a call that did not pass the signal on: the stream is cancelled all the same', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.hang({ afterHeaders: true }))
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'fake-model' }),
    )
    let stream: ModelStream | undefined
    const call = (messages: Parameters<RunTurnsOptions['call']>[0]) => {
      // No `signal: info.signal`: nothing but the run can tell it to stop.
      stream = callModel({
        models: [model],
        request: { messages, maxTokens: 50, stream: true },
        limits: { admission: false },
        deadline: false,
      })
      return stream
    }
    const error = await runTurns({
      operationId: 'op-stream-unlinked',
      messages: history(),
      tools: {},
      call: call as unknown as RunTurnsOptions['call'],
      deadline: false,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    await expect(stream?.result).rejects.toBe(error)
    await expect.poll(() => fake.inFlight).toBe(0)
  })

  it('anything else: a TypeError naming what call must resolve to, not a property read on undefined', async () => {
    for (const value of [undefined, 'the answer', { text: 'no content' }]) {
      const error = await runTurns({
        operationId: `op-${String(value)}`,
        messages: history(),
        tools: {},
        call: async () => value as unknown as ChatResponse,
        deadline: false,
      }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toMatch(/^runTurns: call must resolve to a ChatResponse/)
      expect((error as Error).message).not.toMatch(/stream/)
    }
  })

  it('a run that answers leaves the signal it handed to call as it was', async () => {
    let given: AbortSignal | undefined
    const result = await runTurns({
      operationId: 'op-ok',
      messages: history(),
      tools: {},
      call: async (_messages, info) => {
        given = info.signal
        return {
          id: 'r',
          model: 'm',
          provider: 'stub',
          content: [{ type: 'text', text: 'sunny' }],
          text: 'sunny',
          finishReason: 'stop',
          usage: { inputTokens: 1, outputTokens: 1 },
        }
      },
      deadline: false,
    })
    expect(result.response.text).toBe('sunny')
    expect(given?.aborted).toBe(false)
  })
})
