import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { type RunTurnsOptions, runTurns } from '../../src/agent/runTurns.js'
import { callModel } from '../../src/call/callModel.js'
import { rewritesAnInteger, roundsAnInteger } from '../../src/dialects/roundedByParsing.js'
import type { ChatRequest, ChatResponse } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

// Review of the commits that keep a call's text where Anthropic and Gemini
// send arguments as objects inside the body.

const fakes = useFakes()

async function answer(dialect: 'anthropic' | 'gemini', argumentsJson: string, stream: boolean) {
  const fake = await fakes.start({ dialect })
  fake.enqueue(
    reply.text('', { toolCalls: [{ id: 'c1', name: 'f', arguments: undefined, argumentsJson }] }),
  )
  const model = fakes.adapterFor(dialect, fake.baseURL, 'fake-model')
  const request: ChatRequest = {
    messages: [user('go')],
    maxTokens: 100,
    ...(stream ? { stream: true } : {}),
  }
  const called = callModel({ models: [model], request })
  return stream ? (called as unknown as { result: Promise<ChatResponse> }).result : called
}

const cases = (['anthropic', 'gemini'] as const).flatMap((dialect) =>
  [false, true].map((stream) => ({
    dialect,
    stream,
    name: `${dialect}, ${stream ? 'streamed' : 'whole'}`,
  })),
)

describe('an integer past 2^53 that a double holds exactly', () => {
  // 1859312345678901248 is a double exactly, but written again it reads `…901200`.
  const text = '{"id": 1859312345678901248}'

  it('is written with other digits, though parsing did not round it', () => {
    expect(roundsAnInteger(text)).toBe(false)
    expect(rewritesAnInteger(text)).toBe(true)
    expect(rewritesAnInteger('{"id": 9007199254740993}')).toBe(true)
    expect(
      rewritesAnInteger('{"id": 9007199254740991, "n": 1e20, "s": "1859312345678901248"}'),
    ).toBe(false)
  })

  for (const { dialect, stream, name } of cases) {
    it(`${name}: the call keeps the text as written`, async () => {
      const response = await answer(dialect, text, stream)
      expect(response.content.find((b) => b.type === 'tool_call')).toMatchObject({
        rawArguments: text,
      })
    })
  }
})

describe('arguments nested too deep to write, holding an integer past 2^53', () => {
  const deep = (id: string) => `{"id":${id},"x":${'['.repeat(20_000)}${']'.repeat(20_000)}}`

  for (const { dialect, stream, name } of cases) {
    it(`${name}: a typed failure, as the same arguments without it are, not a RangeError later`, async () => {
      const plain = await answer(dialect, deep('1'), stream).catch((e: unknown) => e)
      const big = await answer(dialect, deep('9007199254740993'), stream).catch((e: unknown) => e)
      expect(plain).toBeInstanceOf(Error)
      expect(big).toBeInstanceOf(Error)
      // Typed, with a stable code (a Gemini stream's parser fails on the plain
      // one, its collector on the other: each a typed failure of the attempt).
      for (const failure of [plain, big]) {
        expect(failure).not.toBeInstanceOf(RangeError)
        expect((failure as { code?: unknown }).code).toMatch(/^[A-Z_]+$/)
      }
    })
  }
})

describe('runTurns: a call left pending when maxTurns is reached', () => {
  for (const dialect of ['openai', 'anthropic'] as const) {
    it(`${dialect}: keeps the text the model wrote, for whoever finishes it`, async () => {
      const argumentsJson = '{"order":9007199254740993}'
      const { call } = await callingOnce(dialect, 'refund', argumentsJson)
      const failed = await runTurns({
        operationId: `pending-${dialect}`,
        maxTurns: 1,
        messages: [user('refund order 9007199254740993')],
        tools: { refund: () => 'done' },
        call,
      }).catch((e: unknown) => e as { messages: ChatRequest['messages'] })
      const pending = (failed.messages.at(-1)?.content as ChatResponse['content'] | undefined)?.[0]
      expect(pending).toMatchObject({ type: 'tool_call', rawArguments: argumentsJson })
    })
  }
})

describe('runTurns: calls whose integers reading changed', () => {
  for (const dialect of ['openai', 'anthropic', 'gemini'] as const) {
    it(`${dialect}: an exact double past 2^53 written with other digits is not run (its string said …901200)`, async () => {
      const argumentsJson = '{"id":1859312345678901248}'
      const { call } = await callingOnce(dialect, 'like', argumentsJson)
      const liked: string[] = []
      const result = await runTurns({
        operationId: `exact-${dialect}`,
        messages: [user('like it')],
        tools: { like: (args) => liked.push(`/tweets/${(args as { id: number }).id}/like`) },
        call,
      })
      expect(liked).toEqual([])
      expect(result.response.content).toEqual([{ type: 'text', text: 'done' }])
    })
  }

  for (const dialect of ['anthropic', 'gemini'] as const) {
    it(`${dialect}: an unknown tool called with a rounded integer does not stop the next turn`, async () => {
      const argumentsJson = '{"order":9007199254740993}'
      const { fake, call } = await callingOnce(dialect, 'refnd', argumentsJson)
      // Before: InvalidChatRequestError on turn 2, the call's text kept in the history.
      const result = await runTurns({
        operationId: `unknown-${dialect}`,
        messages: [user('refund it')],
        tools: { refund: () => 'done' },
        call,
      })
      expect(result.response.content).toEqual([{ type: 'text', text: 'done' }])
      expect(JSON.stringify(fake.requests[1]?.body)).toContain('unknown tool')
    })
  }
})

/**
 * A fake of `dialect` whose first answer calls the tool `name` with
 * `argumentsJson` as written, and "done" after it; and runTurns' `call` on it.
 */
async function callingOnce(
  dialect: 'openai' | 'anthropic' | 'gemini',
  name: string,
  argumentsJson: string,
): Promise<{ fake: Awaited<ReturnType<typeof fakes.start>>; call: RunTurnsOptions['call'] }> {
  const fake = await fakes.start({ dialect })
  fake.enqueue(
    reply.text('', { toolCalls: [{ id: 'c1', name, arguments: undefined, argumentsJson }] }),
  )
  fake.setReply(reply.text('done'))
  const model = fakes.adapterFor(dialect, fake.baseURL, 'fake-model')
  return {
    fake,
    call: (messages, { idempotencyKey, signal }) =>
      callModel({ models: [model], request: { messages, maxTokens: 100 }, idempotencyKey, signal }),
  }
}
