import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'

/**
 * Message content Anthropic's Messages API refuses before generating, which
 * the fake answered with its scripted 200: a message with no content, an
 * empty or blank text block, a failed tool result with nothing in it, a
 * prefill ending in whitespace. @hourglass/llm's Anthropic builder shapes
 * every request so that none reaches the API; the fake now holds it to that.
 */
let fake: FakeProvider
beforeAll(async () => {
  fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('generated anyway') })
})
afterAll(() => fake.close())

async function send(
  messages: unknown[],
  model = 'claude-sonnet-4-5',
  version = '2023-06-01',
): Promise<{ status: number; message?: string | undefined }> {
  const res = await fetch(`${fake.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': version },
    body: JSON.stringify({ model, max_tokens: 50, messages }),
  })
  const body = (await res.json()) as { error?: { type: string; message: string } }
  if (res.status === 400) expect(body.error?.type).toBe('invalid_request_error')
  return { status: res.status, message: body.error?.message }
}

const call = {
  role: 'assistant',
  content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} }],
}

describe('Anthropic refuses content it cannot read', () => {
  it('a string content that is only whitespace, but a final assistant one: read as a blank text block', async () => {
    const blank = 'messages: text content blocks must contain non-whitespace text'
    expect(await send([{ role: 'user', content: '\n' }])).toEqual({ status: 400, message: blank })
    expect(
      await send([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: ' \n' },
        { role: 'user', content: 'go' },
      ]),
    ).toEqual({ status: 400, message: blank })
    expect((await send([{ role: 'user', content: ' hi ' }])).status).toBe(200)
  })

  it('a message with no content, but a final assistant one: "all messages must have non-empty content…"', async () => {
    expect(await send([{ role: 'user', content: '' }])).toEqual({
      status: 400,
      message:
        'messages.0: all messages must have non-empty content except for the optional final assistant message',
    })
    expect(
      (
        await send([
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [] },
          { role: 'user', content: 'go' },
        ])
      ).message,
    ).toMatch(/^messages\.1: all messages must have non-empty content/)
    expect(
      (
        await send([
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: '' },
        ])
      ).status,
    ).toBe(200)
  })

  it('an empty or blank text block', async () => {
    const text = (t: string) => [{ role: 'user', content: [{ type: 'text', text: t }] }]
    expect(await send(text(''))).toEqual({
      status: 400,
      message: 'messages: text content blocks must be non-empty',
    })
    expect(await send(text(' \n'))).toEqual({
      status: 400,
      message: 'messages: text content blocks must contain non-whitespace text',
    })
    expect((await send(text(' hi '))).status).toBe(200)
  })

  it('a failed tool result with no content (left out, "" or []), where a successful one may be empty', async () => {
    const result = (extra: Record<string, unknown>) => [
      { role: 'user', content: 'look it up' },
      call,
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', ...extra }] },
    ]
    for (const content of [{}, { content: '' }, { content: [] }]) {
      expect(await send(result({ ...content, is_error: true }))).toEqual({
        status: 400,
        message: 'messages.2.content.0.tool_result: content cannot be empty if `is_error` is true',
      })
    }
    expect((await send(result({ content: '', is_error: false }))).status).toBe(200)
    expect((await send(result({ content: 'the tool failed', is_error: true }))).status).toBe(200)
  })

  it('a prefill whose text ends in whitespace; earlier assistant turns may', async () => {
    expect(
      await send([
        { role: 'user', content: 'Name a colour.' },
        { role: 'assistant', content: 'The colour is ' },
      ]),
    ).toEqual({
      status: 400,
      message: 'messages: final assistant content cannot end with trailing whitespace',
    })
    const blocks = [{ type: 'text', text: 'The colour is\n' }]
    expect(
      (
        await send([
          { role: 'user', content: 'Name a colour.' },
          { role: 'assistant', content: blocks },
        ])
      ).message,
    ).toBe('messages: final assistant content cannot end with trailing whitespace')
    expect(
      (
        await send([
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'Hello! ' },
          { role: 'user', content: 'Name a colour.' },
          { role: 'assistant', content: 'The colour is' },
        ])
      ).status,
    ).toBe(200)
  })

  it('any prefill to Claude 4.6 and later: "This model does not support assistant message prefill…"; earlier models take one', async () => {
    const prefill = [
      { role: 'user', content: 'Answer in JSON.' },
      { role: 'assistant', content: '{' },
    ]
    for (const model of [
      'claude-opus-4-6',
      'claude-sonnet-4-6',
      'claude-opus-4-7',
      'claude-sonnet-5',
    ]) {
      expect(await send(prefill, model)).toEqual({
        status: 400,
        message:
          'This model does not support assistant message prefill. The conversation must end with a user message.',
      })
    }
    for (const model of ['claude-sonnet-4-5', 'claude-haiku-4-5', 'claude-sonnet-4-20250514']) {
      expect((await send(prefill, model)).status).toBe(200)
    }
    // A conversation that ends with the user's turn is no prefill.
    expect(
      (await send([...prefill, { role: 'user', content: 'go' }], 'claude-opus-4-6')).status,
    ).toBe(200)
  })
})

describe('anthropic-version 2026-10-21 refuses content the older versions take', () => {
  // platform.claude.com, "Migrating to API version 2026-10-21": the fake
  // answered both under it, so a client moved to a current SDK passed
  // against the fake and met the 400 against the API.
  const pdf = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }
  const cited = {
    type: 'text',
    text: 'As the report says…',
    citations: [
      {
        type: 'char_location',
        cited_text: 'x',
        document_index: 0,
        start_char_index: 0,
        end_char_index: 1,
      },
    ],
  }

  it('a document block in an assistant message', async () => {
    const messages = [
      { role: 'user', content: 'Read this.' },
      { role: 'assistant', content: [pdf, { type: 'text', text: 'Read.' }] },
      { role: 'user', content: 'Summarise it.' },
    ]
    expect(await send(messages, 'claude-sonnet-4-5', '2026-10-21')).toEqual({
      status: 400,
      message:
        'messages.1.content.0: document blocks are not accepted in assistant messages; send the document in a user message',
    })
    expect((await send(messages)).status).toBe(200)
    // In a user message it is read.
    const inUser = [{ role: 'user', content: [pdf, { type: 'text', text: 'Summarise it.' }] }]
    expect((await send(inUser, 'claude-sonnet-4-5', '2026-10-21')).status).toBe(200)
  })

  it('a user text block with citations; none, or an empty list, is read', async () => {
    const messages = [{ role: 'user', content: [{ type: 'text', text: 'Hi.' }, cited] }]
    expect(await send(messages, 'claude-sonnet-4-5', '2026-10-21')).toEqual({
      status: 400,
      message: 'messages.0.content.1.text.citations: Extra inputs are not permitted',
    })
    expect((await send(messages)).status).toBe(200)
    const empty = [{ role: 'user', content: [{ ...cited, citations: [] }] }]
    expect((await send(empty, 'claude-sonnet-4-5', '2026-10-21')).status).toBe(200)
    // An assistant's cited text, sent back, is its own answer's: read.
    const answered = [
      { role: 'user', content: 'What does it say?' },
      { role: 'assistant', content: [cited] },
      { role: 'user', content: 'And then?' },
    ]
    expect((await send(answered, 'claude-sonnet-4-5', '2026-10-21')).status).toBe(200)
  })
})
