import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'

/** An error answer's body, OpenAI's or Anthropic's shape (both carry `error`). */
interface ErrorBody {
  error: { message?: string; type?: string; param?: unknown; code?: unknown }
}

/**
 * OpenAI and Anthropic refuse a history whose tool calls and tool results do
 * not pair up, and Gemini one whose function responses do not match its
 * function calls in number. The fakes answered 200, so an agent loop that lost a tool
 * result, or replayed one whose call a history window had cut, passed its
 * tests and failed its next request against the API.
 */

let openai: FakeProvider
let anthropic: FakeProvider
beforeAll(async () => {
  openai = await startFakeProvider({ dialect: 'openai', reply: reply.text('4 °C') })
  anthropic = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('4 °C') })
})
afterAll(async () => {
  await openai.close()
  await anthropic.close()
})

const CALL = (id: string) => ({
  id,
  type: 'function',
  function: { name: 'weather', arguments: '{"city":"Oslo"}' },
})
const tools = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }]

async function chat(messages: unknown[]) {
  const res = await fetch(`${openai.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages, tools }),
  })
  return { status: res.status, body: (await res.json()) as ErrorBody }
}

const USE = (id: string) => ({ type: 'tool_use', id, name: 'weather', input: { city: 'Oslo' } })
const RESULT = (id: string) => ({ type: 'tool_result', tool_use_id: id, content: '4 °C' })

async function messages(history: unknown[]) {
  const res = await fetch(`${anthropic.baseURL}/v1/messages`, {
    method: 'POST',
    headers: {
      'x-api-key': 'sk-ant-test',
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 256,
      messages: history,
      tools: [{ name: 'weather', input_schema: { type: 'object' } }],
    }),
  })
  return { status: res.status, body: (await res.json()) as ErrorBody }
}

describe('openai chat completions', () => {
  it('refuses an assistant tool_calls message not answered for every id', async () => {
    const { status, body } = await chat([
      { role: 'user', content: 'weather in Oslo and Bergen?' },
      { role: 'assistant', content: null, tool_calls: [CALL('call_a'), CALL('call_b')] },
      { role: 'tool', tool_call_id: 'call_a', content: '4 °C' },
    ])
    expect(status).toBe(400)
    expect(body.error).toEqual({
      message:
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_b",
      type: 'invalid_request_error',
      param: 'messages.[1].role',
      code: null,
    })
  })

  it('refuses a tool message that answers no tool_calls message', async () => {
    const { status, body } = await chat([
      { role: 'user', content: 'weather in Oslo?' },
      { role: 'tool', tool_call_id: 'call_a', content: '4 °C' },
    ])
    expect(status).toBe(400)
    expect(body.error.message).toBe(
      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    )
    expect(body.error.param).toBe('messages.[1].role')
  })

  it('answers a loop whose every call has its result, in any order', async () => {
    const { status } = await chat([
      { role: 'user', content: 'weather in Oslo and Bergen?' },
      { role: 'assistant', content: null, tool_calls: [CALL('call_a'), CALL('call_b')] },
      { role: 'tool', tool_call_id: 'call_b', content: '6 °C' },
      { role: 'tool', tool_call_id: 'call_a', content: '4 °C' },
      { role: 'assistant', content: 'Oslo 4 °C, Bergen 6 °C.' },
      { role: 'user', content: 'thanks' },
    ])
    expect(status).toBe(200)
  })
})

describe('anthropic messages', () => {
  it('refuses a tool_use without its tool_result in the next message', async () => {
    const { status, body } = await messages([
      { role: 'user', content: 'weather in Oslo?' },
      { role: 'assistant', content: [USE('toolu_a')] },
      { role: 'user', content: 'and Bergen?' },
    ])
    expect(status).toBe(400)
    expect(body.error.type).toBe('invalid_request_error')
    expect(body.error.message).toBe(
      'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    )
  })

  it('refuses a tool_result whose tool_use is not in the previous message', async () => {
    const { status, body } = await messages([{ role: 'user', content: [RESULT('toolu_a')] }])
    expect(status).toBe(400)
    expect(body.error.message).toBe(
      'messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_a. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
    )
  })

  it('answers a paired loop', async () => {
    const { status } = await messages([
      { role: 'user', content: 'weather in Oslo?' },
      { role: 'assistant', content: [USE('toolu_a')] },
      { role: 'user', content: [RESULT('toolu_a')] },
    ])
    expect(status).toBe(200)
  })
})

describe('gemini: function responses against the calls of the turn before', () => {
  const path = '/models/gemini-2.5-flash:generateContent'
  const call = (name: string) => ({ functionCall: { name, args: {} } })
  const response = (name: string) => ({ functionResponse: { name, response: { ok: true } } })
  const refusal = {
    code: 400,
    message:
      'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.',
    status: 'INVALID_ARGUMENT',
  }
  const send = async (fake: FakeProvider, contents: unknown[]) => {
    const res = await fetch(`${fake.baseURL}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents }),
    })
    return { status: res.status, body: (await res.json()) as { error?: unknown } }
  }
  const ask = { role: 'user', parts: [{ text: 'weather in Paris and Rome?' }] }

  it('two parallel calls answered by one response, or a response after a turn that called nothing, are the INVALID_ARGUMENT 400; answered in full, 200', async () => {
    const fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('sunny') })
    onTestFinished(() => fake.close())
    const oneOfTwo = await send(fake, [
      ask,
      { role: 'model', parts: [call('paris'), call('rome')] },
      { role: 'user', parts: [response('paris')] },
    ])
    expect(oneOfTwo.status).toBe(400)
    expect(oneOfTwo.body.error).toEqual(refusal)

    const unasked = await send(fake, [
      ask,
      { role: 'model', parts: [{ text: 'let me look' }] },
      { role: 'user', parts: [response('paris')] },
    ])
    expect(unasked.status).toBe(400)
    expect(unasked.body.error).toEqual(refusal)

    const calledThenText = await send(fake, [
      ask,
      { role: 'model', parts: [call('paris')] },
      { role: 'user', parts: [{ text: 'never mind' }] },
    ])
    expect(calledThenText.status).toBe(400)

    const answered = await send(fake, [
      ask,
      { role: 'model', parts: [call('paris'), call('rome')] },
      { role: 'user', parts: [response('paris'), response('rome')] },
    ])
    expect(answered.status).toBe(200)
    expect(fake.requests.map((r) => r.outcome)).toEqual(['error', 'error', 'error', 'success'])
  })
})
