import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { type BodyHook, createAdapter } from '../../src/adapters/createAdapter.js'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import { callModel } from '../../src/call/callModel.js'
import type { Dialect } from '../../src/dialects/Dialect.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import type { ChatMessage, ChatRequest } from '../../src/types.js'
import { useFakes } from '../call/support/fakes.js'

/**
 * Tool-call arguments (or a tool result) that JSON cannot hold — a BigInt id
 * from a database driver, an object that refers to itself, nesting past the
 * stack — failed the call with a raw `TypeError: Do not know how to
 * serialize a BigInt` / `Converting circular structure to JSON` /
 * `RangeError: Maximum call stack size exceeded` from inside a request
 * builder, naming no message. Every adapter refuses them as
 * InvalidChatRequestError naming the message and the call, before anything
 * is sent; so too a tool's parameters and an `extra` field.
 */

const fakes = useFakes()

function cyclic(): Record<string, unknown> {
  const order: Record<string, unknown> = { id: 7 }
  order['self'] = order
  return order
}

function nested(depth: number): unknown {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = { a: value }
  return value
}

function history(args: unknown, result: unknown = '{"ok":true}', raw?: string): ChatMessage[] {
  return [
    { role: 'user', content: 'refund order 7' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Looking it up.' },
        { type: 'tool_call', id: 'call_ok', name: 'lookup', arguments: { id: 7 } },
        {
          type: 'tool_call',
          id: 'call_bad',
          name: 'refund',
          arguments: args as never,
          ...(raw === undefined ? {} : { rawArguments: raw }),
        },
      ],
    },
    {
      role: 'tool',
      content: [
        { type: 'tool_result', toolCallId: 'call_ok', content: 'found' },
        { type: 'tool_result', toolCallId: 'call_bad', content: result as never },
      ],
    },
  ]
}

const DIALECTS = ['openai', 'anthropic', 'gemini', 'deepseek', 'ernie', 'qwen', 'doubao'] as const

/** What the adapter's `prepare` (the build `callModel` makes before anything is sent) throws. */
function refusal(
  name: (typeof DIALECTS)[number] | Dialect,
  request: Partial<ChatRequest>,
  hook?: BodyHook,
): unknown {
  const dialect = typeof name === 'string' ? dialects[name] : name
  const adapter = fakes.adapter(
    createAdapter(dialect, { baseURL: 'http://127.0.0.1:9', apiKey: 'sk', model: 'm' }, hook),
  )
  try {
    adapter.prepare?.({ messages: [], maxTokens: 16, ...request }, false)
  } catch (error) {
    return error
  }
  return undefined
}

describe('tool values JSON cannot hold', () => {
  it.each(DIALECTS)(
    '%s: arguments with a BigInt or a cycle are refused naming the call',
    (name) => {
      for (const args of [{ orderId: 2n ** 64n }, cyclic()]) {
        const error = refusal(name, { messages: history(args) })
        expect(isInvalidChatRequest(error), String(error)).toBe(true)
        expect(error).toMatchObject({
          code: 'INVALID_CHAT_REQUEST',
          field: 'messages[1].tool_calls[1].function.arguments',
        })
        expect((error as Error).message).toContain('tool call "call_bad" ("refund")')
      }
    },
  )

  it.each(DIALECTS)(
    '%s: a tool result that is no text and holds a BigInt or a cycle is refused',
    (name) => {
      for (const result of [{ refunded: 10n }, cyclic()]) {
        const error = refusal(name, { messages: history({ id: 7 }, result) })
        expect(isInvalidChatRequest(error), String(error)).toBe(true)
        expect(error).toMatchObject({ field: 'messages[2].content[1].content' })
        expect((error as Error).message).toContain('tool call "call_bad"')
      }
    },
  )

  it.each(['openai', 'anthropic', 'gemini'] as const)(
    "%s: a BigInt behind a value's toJSON (a Money class) or boxed (Object(5n)) is the caller's too, refused naming it",
    (name) => {
      class Money {
        constructor(readonly cents: bigint) {}
        toJSON() {
          return { cents: this.cents, currency: 'EUR' }
        }
      }
      for (const result of [{ refunded: new Money(500n) }, { refunded: Object(5n) }]) {
        const error = refusal(name, { messages: history({ id: 7 }, result) })
        expect(isInvalidChatRequest(error), String(error)).toBe(true)
        expect(error).toMatchObject({ field: 'messages[2].content[1].content' })
      }
    },
  )

  it('two classes referring to each other through toJSON (JSON sees no cycle, and runs out of stack): refused at once, not walked without end', () => {
    class User {
      account: unknown
      password = 'x'
      toJSON() {
        const { password: _, ...rest } = this
        return rest
      }
    }
    class Account {
      owner: unknown
      pin = '0000'
      toJSON() {
        const { pin: _, ...rest } = this
        return rest
      }
    }
    const user = new User()
    const account = new Account()
    user.account = account
    account.owner = user
    // Before, the walk took 19 s and 2.4 GB (or the heap), then let the raw RangeError through.
    const error = refusal('anthropic', { messages: history({ id: 7 }, { user }) })
    expect(isInvalidChatRequest(error), String(error)).toBe(true)
    expect((error as Error).message).toContain('it refers to itself')
  })

  it("OpenAI's wire sends a call's rawArguments as they are: a BigInt in the parsed value is not refused there", () => {
    const messages = history({ orderId: 1n }, undefined, '{"orderId":1}')
    expect(refusal('openai', { messages })).toBeUndefined()
    expect(isInvalidChatRequest(refusal('anthropic', { messages }))).toBe(true)
  })

  it("a BigInt in a tool's parameters, or in an extra field, is refused naming it", () => {
    const tools = [
      {
        name: 'refund',
        parameters: { type: 'object', properties: { id: { type: 'integer', maximum: 2n ** 63n } } },
      },
    ]
    for (const name of ['anthropic', 'gemini', 'openai'] as const) {
      const error = refusal(name, { messages: [{ role: 'user', content: 'hi' }], tools })
      expect(error, name).toMatchObject({
        code: 'INVALID_CHAT_REQUEST',
        field: 'tools[0].function.parameters',
      })
      expect((error as Error).message).toContain('tool "refund"')
    }
    const error = refusal('openai', {
      messages: [{ role: 'user', content: 'hi' }],
      extra: { seed: 7n },
    })
    expect(error).toMatchObject({ code: 'INVALID_CHAT_REQUEST', field: 'seed' })
  })

  it('arguments nested just past what JSON.stringify writes are refused, never a raw RangeError', () => {
    // The depth at which JSON.stringify first overflows here; the build
    // writes at a deeper stack, so it overflows a few levels sooner.
    let lo = 100
    let hi = 100_000
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1
      try {
        JSON.stringify(nested(mid))
        lo = mid
      } catch {
        hi = mid
      }
    }
    for (const name of ['anthropic', 'gemini', 'openai'] as const) {
      const outcomes = new Set<string>()
      for (let depth = hi - 12; depth <= hi + 4; depth++) {
        const error = refusal(name, { messages: history(nested(depth)) })
        if (error === undefined) {
          outcomes.add('built')
          continue
        }
        expect(isInvalidChatRequest(error), `${name} at ${depth}: ${String(error)}`).toBe(true)
        expect(error).toMatchObject({ field: 'messages[1].tool_calls[1].function.arguments' })
        expect((error as Error).message).toContain(`nested ${depth} levels deep`)
        outcomes.add('refused')
      }
      expect(outcomes, name).toContain('refused')
    }
  })

  it('a refusal keeps what writing the request threw as its cause', () => {
    const error = refusal('anthropic', { messages: history({ orderId: 2n ** 64n }) })
    expect(isInvalidChatRequest(error), String(error)).toBe(true)
    expect((error as Error).cause).toBeInstanceOf(TypeError)
    expect(String((error as Error).cause)).toContain('BigInt')
  })

  it("a value of the caller's JSON cannot hold outside the named places refuses the request as a whole", () => {
    const error = refusal('openai', {
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 1n as never,
    })
    expect(error).toMatchObject({ code: 'INVALID_CHAT_REQUEST', field: 'request' })
    expect((error as Error).message).toContain('BigInt')
    expect((error as Error).cause).toBeInstanceOf(TypeError)
  })
  it('callModel: the typed error, and not a byte sent', async () => {
    const fake = await fakes.start({ dialect: 'anthropic', reply: reply.text('done') })
    const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-sonnet-4-5')
    const error = await callModel({
      models: [model],
      request: { messages: history({ orderId: 2n ** 64n }), maxTokens: 16 },
    }).catch((e: unknown) => e)
    expect(isInvalidChatRequest(error), String(error)).toBe(true)
    expect(error).toMatchObject({ field: 'messages[1].tool_calls[1].function.arguments' })
    expect(fake.requests).toHaveLength(0)
  })

  it('under a cost budget or a TPM limit: rawArguments go out, and a value without them gets the typed error', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('done') })
    const model = fakes.adapterFor('openai', fake.baseURL, 'm')
    const prices = { m: { inputPerMTok: 1, outputPerMTok: 1 } }
    const quiet = { warn: () => {} }
    const limits = () => [
      { admission: false as const, budget: new CostBudget({ limitUsd: 100, prices }) },
      {
        admission: new Admission({
          limits: new ProviderLimits({ limits: { openai: { tpm: 100_000 } }, logger: quiet }),
          logger: quiet,
        }),
      },
    ]
    for (const args of [{ orderId: 1n }, cyclic()]) {
      for (const limit of limits()) {
        const messages = history(args, undefined, '{"orderId":1}')
        const answer = await callModel({
          models: [model],
          request: { messages, maxTokens: 16 },
          limits: limit,
        })
        expect(answer.content).toMatchObject([{ type: 'text', text: 'done' }])
      }
    }
    expect(fake.requests).toHaveLength(4)
    for (const limit of limits()) {
      const error = await callModel({
        models: [model],
        request: { messages: history({ orderId: 1n }), maxTokens: 16 },
        limits: limit,
      }).catch((e: unknown) => e)
      expect(error).toMatchObject({
        code: 'INVALID_CHAT_REQUEST',
        field: 'messages[1].tool_calls[1].function.arguments',
      })
    }
    expect(fake.requests).toHaveLength(4)
  })

  it('estimatePromptTokens never throws: it counts the rawArguments that go out, and nothing for a value JSON cannot hold', () => {
    const raw = history({ orderId: 1n }, undefined, '{"orderId":1}')
    const text = history({ orderId: 1 }, undefined, '{"orderId":1}')
    expect(estimatePromptTokens({ messages: raw })).toBe(estimatePromptTokens({ messages: text }))
    const tools = [{ name: 't', parameters: { max: 1n } as never }]
    expect(() =>
      estimatePromptTokens({ messages: history(cyclic()), tools, extra: { seed: 7n } }),
    ).not.toThrow()
  })
})

/**
 * A custom dialect's or body hook's own bug — a builder that recurses
 * forever, a BigInt or a cycle it adds to the body — is no fault of the
 * caller's values: it was refused as INVALID_CHAT_REQUEST (field `request`,
 * no cause; the gateway answered a 400 blaming its client, never retried),
 * the stack no longer naming the function at fault. It is thrown as it was.
 */
describe("a dialect's or body hook's own value JSON cannot hold", () => {
  const hi: Partial<ChatRequest> = { messages: [{ role: 'user', content: 'hi' }] }

  function recurseForever(n: number): number {
    return recurseForever(n + 1) + 1
  }

  it('a custom dialect whose builder recurses forever: its RangeError, naming it', () => {
    const recursing: Dialect = {
      ...dialects.openai,
      buildRequest: (request, model) => {
        recurseForever(0)
        return dialects.openai.buildRequest(request, model)
      },
    }
    const error = refusal(recursing, hi)
    expect(isInvalidChatRequest(error), String(error)).toBe(false)
    expect(error).toBeInstanceOf(RangeError)
    expect((error as Error).stack).toContain('recurseForever')
  })

  it('a custom dialect that adds its own BigInt or cycle to the body: its TypeError', () => {
    const own: Record<string, unknown> = { build: 1 }
    own['self'] = own
    for (const added of [{ build: 1n }, own]) {
      const adding: Dialect = {
        ...dialects.anthropic,
        buildRequest: (request, model) => {
          const made = dialects.anthropic.buildRequest(request, model)
          return { ...made, body: { ...made.body, metadata: added } }
        },
      }
      const error = refusal(adding, hi)
      expect(isInvalidChatRequest(error), String(error)).toBe(false)
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toMatch(/BigInt|circular/)
    }
  })

  it("a body hook that recurses forever or adds a BigInt: its own error, even beside a call's unsent parsed BigInt", () => {
    const recursing = refusal('anthropic', hi, (body) => {
      recurseForever(0)
      return body
    })
    expect(isInvalidChatRequest(recursing), String(recursing)).toBe(false)
    expect((recursing as Error).stack).toContain('recurseForever')
    // OpenAI's wire sends this call's rawArguments, not its parsed BigInt:
    // the caller's values can all be written.
    const messages = history({ orderId: 1n }, undefined, '{"orderId":1}')
    const adding = refusal('openai', { messages }, (body) => ({ ...body, user: 7n }))
    expect(isInvalidChatRequest(adding), String(adding)).toBe(false)
    expect(adding).toBeInstanceOf(TypeError)
    expect((adding as Error).message).toContain('BigInt')
  })
})
