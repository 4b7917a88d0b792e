import { afterEach, describe, expect, it } from 'vitest'
import {
  type FakeProvider,
  geminiErrors,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'
import { readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const generate = (base: string, method: string, query = '') =>
  fetch(`${base}/models/gemini-2.0-flash:${method}${query}`, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' },
    body: JSON.stringify({
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      // Thought parts are sent only when asked for (ai.google.dev/gemini-api/docs/thinking).
      generationConfig: { thinkingConfig: { includeThoughts: true } },
    }),
  })

describe('fake Gemini', () => {
  it('answers generateContent with candidates, finishReason and usageMetadata; model and key come from path and header', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('Bonjour le monde', { usage: { inputTokens: 3 } }),
    })
    const res = await generate(fake.baseURL, 'generateContent')
    // Google names no request in a header (the body's `responseId` does).
    expect(res.headers.get('x-request-id')).toBeNull()
    expect(await res.json()).toMatchObject({
      candidates: [
        {
          content: { parts: [{ text: 'Bonjour le monde' }], role: 'model' },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 3, totalTokenCount: 6 },
      modelVersion: 'gemini-2.0-flash',
    })
    expect(fake.requests[0]).toMatchObject({
      route: 'gemini',
      model: 'gemini-2.0-flash',
      apiKey: 'AIza-test',
      stream: false,
    })
    expect(fake.baseURL).toBe(`${fake.url}/v1beta`)
  })

  it('streams with alt=sse as whole responses separated by CRLF CRLF; the last carries finishReason', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('a b c', { thinking: 'hmm', signature: 'sig-g' }),
    })
    const stream = await readSse(await generate(fake.baseURL, 'streamGenerateContent', '?alt=sse'))
    expect(stream.raw.endsWith('\r\n\r\n')).toBe(true)
    expect(
      stream.raw
        .split('\r\n\r\n')
        .filter(Boolean)
        .every((f) => f.startsWith('data: {')),
    ).toBe(true)
    const chunks = stream.events.map(
      (e) =>
        JSON.parse(e.data) as {
          candidates: { content: { parts?: Record<string, unknown>[] }; finishReason?: string }[]
        },
    )
    // The closing chunk has no parts key (see realWireFormats.test.ts).
    const parts = chunks.flatMap((c) => c.candidates[0]!.content.parts ?? [])
    expect(
      parts
        .filter((p) => p['thought'] === true)
        .map((p) => p['text'])
        .join(''),
    ).toBe('hmm')
    expect(
      parts
        .filter((p) => p['thought'] !== true)
        .map((p) => p['text'] ?? '')
        .join(''),
    ).toBe('a b c')
    // No function call: the last part the model streams is signed (thought-signatures docs).
    expect(parts.filter((p) => p['thoughtSignature'] !== undefined)).toEqual([
      { text: ' c', thoughtSignature: 'sig-g' },
    ])
    expect(chunks.at(-1)!.candidates[0]!.finishReason).toBe('STOP')
    expect(chunks.slice(0, -1).every((c) => c.candidates[0]!.finishReason === undefined)).toBe(true)
    expect(fake.requests[0]).toMatchObject({ stream: true, query: { alt: 'sse' } })
  })

  it('answers 429 RESOURCE_EXHAUSTED with the wait exact in the message, in whole seconds as RetryInfo.retryDelay', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: geminiErrors.resourceExhausted({ retryDelay: '34.4s' }),
    })
    const res = await generate(fake.baseURL, 'generateContent')
    expect(res.status).toBe(429)
    const body = (await res.json()) as {
      error: { code: number; status: string; message: string; details: Record<string, unknown>[] }
    }
    expect(body.error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' })
    expect(body.error.message).toMatch(/Please retry in 34\.4s\.$/)
    // Google cuts RetryInfo's seconds: "58.934310785s" in the message, "58s" here.
    expect(
      body.error.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo'),
    ).toEqual({
      '@type': 'type.googleapis.com/google.rpc.RetryInfo',
      retryDelay: '34s',
    })
  })

  it('can script the permanent variant: a quota with limit 0', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: geminiErrors.resourceExhausted({ limit: 0 }),
    })
    const body = (await (await generate(fake.baseURL, 'generateContent')).json()) as {
      error: { message: string; details: { violations?: { quotaValue: string }[] }[] }
    }
    expect(body.error.message).toContain('limit: 0')
    expect(body.error.details[0]!.violations![0]!.quotaValue).toBe('0')
  })

  it('a rate-limit window in the Gemini dialect answers RESOURCE_EXHAUSTED with the window as retryDelay', async () => {
    fake = await startFakeProvider({ dialect: 'gemini' })
    fake.rateLimit({ forMs: 60_000 })
    const body = JSON.stringify(await (await generate(fake.baseURL, 'generateContent')).json())
    expect(body).toContain('"retryDelay":"60s"')
  })

  it('reports the cached part of promptTokenCount as cachedContentTokenCount when a reply says so', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('ok', { usage: { inputTokens: 100, cachedInputTokens: 64 } }),
    })
    const body = (await (await generate(fake.baseURL, 'generateContent')).json()) as {
      usageMetadata: unknown
    }
    expect(body.usageMetadata).toMatchObject({ promptTokenCount: 100, cachedContentTokenCount: 64 })
  })
  it('sends a blocked prompt as Gemini answers: no candidates, in the form the request asked for', async () => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: geminiErrors.promptBlocked() })
    const blocked = {
      promptFeedback: { blockReason: 'PROHIBITED_CONTENT' },
      usageMetadata: {
        promptTokenCount: expect.any(Number),
        totalTokenCount: expect.any(Number),
        promptTokensDetails: [{ modality: 'TEXT', tokenCount: expect.any(Number) }],
      },
      modelVersion: 'gemini-2.0-flash',
      responseId: expect.any(String),
    }
    // A stream's one event, as a stream: the fake sent JSON to a stream request.
    const sse = await generate(fake.baseURL, 'streamGenerateContent', '?alt=sse')
    expect(sse.status).toBe(200)
    expect(sse.headers.get('content-type')).toBe('text/event-stream')
    const stream = await readSse(sse)
    expect(stream.raw).toMatch(/^data: \{.*\}\r\n\r\n$/)
    expect(stream.events.map((e) => JSON.parse(e.data))).toEqual([blocked])
    // The JSON array's one element; the whole answer.
    const array = await generate(fake.baseURL, 'streamGenerateContent')
    expect(await array.json()).toEqual([blocked])
    const json = (await (await generate(fake.baseURL, 'generateContent')).json()) as object
    expect(json).toEqual(blocked)
    expect('candidates' in json).toBe(false)
    expect(fake.paidGenerations).toBe(0)
    // Counted and named as an empty answer to the same request is.
    fake.setReply(reply.text(''))
    const empty = (await (await generate(fake.baseURL, 'generateContent')).json()) as Record<
      string,
      unknown
    >
    const answer = json as Record<string, unknown>
    expect(answer['usageMetadata']).toEqual(empty['usageMetadata'])
    expect(answer['modelVersion']).toBe(empty['modelVersion'])
    expect(String(answer['responseId'])).toHaveLength(String(empty['responseId']).length)
  })

  it('sends a malformed function call as a 200 candidate with no content; it is billed', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: geminiErrors.malformedFunctionCall({ finishMessage: 'Malformed function call: x()' }),
    })
    const stream = await readSse(await generate(fake.baseURL, 'streamGenerateContent', '?alt=sse'))
    expect(stream.events.map((e) => JSON.parse(e.data))).toEqual([
      expect.objectContaining({
        candidates: [
          {
            content: {},
            finishReason: 'MALFORMED_FUNCTION_CALL',
            finishMessage: 'Malformed function call: x()',
            index: 0,
          },
        ],
        modelVersion: 'gemini-2.0-flash',
      }),
    ])
    expect(fake.requests[0]!.outcome).toBe('error')
    expect(fake.paidGenerations).toBe(1)
  })

  it('a blocked prompt or malformed call is no answer to a request Gemini refuses first: the refusal, unbilled', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: geminiErrors.malformedFunctionCall(),
    })
    const post = (body: string) =>
      fetch(`${fake!.baseURL}/models/gemini-2.0-flash:generateContent`, {
        method: 'POST',
        headers: { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' },
        body,
      })
    // A tool name Gemini refuses: the 400 a text reply gets, not the 200.
    const named = await post(
      JSON.stringify({
        contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
        tools: [{ functionDeclarations: [{ name: '1password_read' }] }],
      }),
    )
    expect(named.status).toBe(400)
    expect(JSON.stringify(await named.json())).toContain('[FIELD_INVALID] Invalid function name.')
    // A body that is no JSON is read by nothing: no answer, and nothing billed.
    const unreadable = await post('{"contents": [')
    expect(unreadable.status).toBe(400)
    expect(((await unreadable.json()) as { error: { status: string } }).error.status).toBe(
      'INVALID_ARGUMENT',
    )
    fake.setReply(geminiErrors.promptBlocked())
    expect((await post('{"contents": [')).status).toBe(400)
    expect(fake.paidGenerations).toBe(0)
  })
})
