import { reply } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * Gemini carries a call's arguments as a JSON object inside the body
 * (`functionCall.args`), in a whole answer and in every streamed chunk, so
 * parsing rounded an integer past 2^53 in them: a tweet id
 * `1859312345678901234` reached the client as `…200`, streamed or not. The
 * client gets what the model wrote either way.
 */

const gateway = oneProviderGateway()
afterEach(() => gateway.close())

const text = '{"id": 1859312345678901234, "tag": "x"}'
const other = '{ "ids" : [9007199254740993] }'
const request = {
  model: 'm',
  messages: [{ role: 'user' as const, content: 'look it up' }],
  tools: [
    { type: 'function' as const, function: { name: 'tweet', parameters: { type: 'object' } } },
  ],
}

const toolCalls = [
  { name: 'tweet', arguments: undefined, argumentsJson: text },
  { name: 'tweet', arguments: undefined, argumentsJson: '{"id": 7}' },
  { name: 'tweet', arguments: undefined, argumentsJson: other },
]

it("hands Gemini's tool-call arguments to the client as the model wrote them, streamed or not", async () => {
  const fake = await gateway.one('gemini')

  fake.enqueue(reply.text('', { toolCalls }))
  const whole = await gateway.harness.client.chat.completions.create(request)
  const calls = (whole.choices[0]?.message.tool_calls ?? []).map((c) =>
    c.type === 'function' ? c.function.arguments : undefined,
  )
  expect(calls).toEqual([text, '{"id":7}', other])

  fake.enqueue(reply.text('', { toolCalls }))
  const stream = await gateway.harness.client.chat.completions.create({ ...request, stream: true })
  const streamed: string[] = []
  for await (const chunk of stream) {
    for (const delta of chunk.choices[0]?.delta.tool_calls ?? [])
      streamed[delta.index] = (streamed[delta.index] ?? '') + (delta.function?.arguments ?? '')
  }
  expect(streamed).toEqual([text, '{"id":7}', other])
})
