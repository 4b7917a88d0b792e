import { reply } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * Anthropic's whole answer carries a call's arguments as a JSON object inside
 * the body (`tool_use.input`), so parsing the body rounded an integer past
 * 2^53 in them: a tweet id `1859312345678901234` reached the client as
 * `…200` unstreamed, and exactly streamed (`partial_json` is text). The
 * client gets what the model wrote either way.
 */

const gateway = oneProviderGateway()
afterEach(() => gateway.close())

const text = '{"id": 1859312345678901234, "tag": "x"}'
const request = {
  model: 'm',
  messages: [{ role: 'user' as const, content: 'look it up' }],
  tools: [
    { type: 'function' as const, function: { name: 'tweet', parameters: { type: 'object' } } },
  ],
}

it("hands Anthropic's tool-call arguments to the client as the model wrote them, streamed or not", async () => {
  const fake = await gateway.one('anthropic')
  const toolCalls = [{ id: 'toolu_1', name: 'tweet', arguments: undefined, argumentsJson: text }]

  fake.enqueue(reply.text('', { toolCalls }))
  const whole = await gateway.harness.client.chat.completions.create(request)
  const call = whole.choices[0]?.message.tool_calls?.[0]
  expect(call?.type === 'function' ? call.function.arguments : undefined).toBe(text)

  fake.enqueue(reply.text('', { toolCalls }))
  const stream = await gateway.harness.client.chat.completions.create({ ...request, stream: true })
  let streamed = ''
  for await (const chunk of stream) {
    for (const delta of chunk.choices[0]?.delta.tool_calls ?? [])
      streamed += delta.function?.arguments ?? ''
  }
  expect(streamed).toBe(text)
})

it('leaves arguments parsing changed nothing in as the gateway writes any object', async () => {
  const fake = await gateway.one('anthropic')
  const small = '{"id": 42, "tag": "x"}'
  fake.enqueue(
    reply.text('', {
      toolCalls: [{ id: 'toolu_1', name: 'tweet', arguments: undefined, argumentsJson: small }],
    }),
  )
  const whole = await gateway.harness.client.chat.completions.create(request)
  const call = whole.choices[0]?.message.tool_calls?.[0]
  expect(call?.type === 'function' ? call.function.arguments : undefined).toBe(
    '{"id":42,"tag":"x"}',
  )
})

for (const dialect of ['anthropic', 'gemini'] as const) {
  it(`${dialect}: an integer a double holds exactly, past 2^53, reaches the client with its own digits`, async () => {
    const fake = await gateway.one(dialect)
    // Not rounded by parsing, but written again it read `…901200`.
    const exact = '{"id": 1859312345678901248}'
    const toolCalls = [{ id: 'c1', name: 'tweet', arguments: undefined, argumentsJson: exact }]
    fake.enqueue(reply.text('', { toolCalls }))
    const whole = await gateway.harness.client.chat.completions.create(request)
    const call = whole.choices[0]?.message.tool_calls?.[0]
    expect(call?.type === 'function' ? call.function.arguments : undefined).toBe(exact)
    fake.enqueue(reply.text('', { toolCalls }))
    const stream = await gateway.harness.client.chat.completions.create({
      ...request,
      stream: true,
    })
    let streamed = ''
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? [])
        streamed += delta.function?.arguments ?? ''
    }
    expect(streamed).toBe(exact)
  })
}
