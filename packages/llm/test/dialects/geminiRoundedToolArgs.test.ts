import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import type { StreamEvent, ToolCallBlock } from '../../src/types.js'

/**
 * Gemini carries each function call's arguments as a JSON object inside the
 * body (`functionCall.args`), in a whole answer and in every streamed chunk
 * (`alt=sse`, or one JSON array without it): parsing rounded an integer past
 * 2^53 in them, so a tweet id `1859312345678901234` was handed on as `…200`
 * (`rawArguments` unset, a stream's `argumentsDelta` written from the
 * parsed object), streamed or not. With the text at hand, a call whose
 * arguments parsing rounded keeps them as written.
 */

const gemini = dialects.gemini
const TWEET = '1859312345678901234'
const ORDER = '9007199254740993'

/** A `GenerateContentResponse` whose parts' `args` are spliced in as written (JSON.stringify would round them). */
function chunk(parts: unknown[], finish = true, args: string[] = []): string {
  let text = JSON.stringify({
    candidates: [
      {
        content: { role: 'model', parts },
        ...(finish ? { finishReason: 'STOP' } : {}),
        index: 0,
      },
    ],
    usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'r1',
  })
  for (const written of args) text = text.replace('"§"', written)
  return text
}

const call = (name: string) => ({ functionCall: { name, args: '§' } })

function calls(content: readonly { type: string }[]): ToolCallBlock[] {
  return content.filter((b): b is ToolCallBlock => b.type === 'tool_call')
}

function streamed(data: readonly string[]): StreamEvent[] {
  const parser = gemini.createStreamParser()
  return data.flatMap((d) => parser.parseStreamEvent({ event: undefined, data: d }))
}

const argumentTexts = (events: readonly StreamEvent[]) =>
  events.flatMap((e) => (e.type === 'tool_call' ? [e.argumentsDelta] : []))

describe('a Gemini answer whose function-call args hold an integer past 2^53', () => {
  const args = [`{"id":${TWEET},"tag":"x"}`, '{"n": 7}', `{ "order" : [ ${ORDER} ] }`]
  const body = chunk([{ text: 'Looking.' }, call('a'), call('b'), call('c')], true, args)

  it('whole: keeps the args as written (rawArguments), from the text or the parsed body with its text', () => {
    for (const response of [
      gemini.parseResponse(body, {}),
      gemini.parseResponse(JSON.parse(body), { text: body }),
    ]) {
      const [a, b, c] = calls(response.content)
      expect(a).toMatchObject({ name: 'a', rawArguments: args[0] })
      expect(a?.arguments).toEqual({ id: Number(TWEET), tag: 'x' })
      // Nothing rounded: left as before, the arguments an object alone.
      expect(b?.rawArguments).toBeUndefined()
      expect(b?.arguments).toEqual({ n: 7 })
      expect(c?.rawArguments).toBe(args[2])
      expect(response.finishReason).toBe('tool_calls')
    }
  })

  it('whole, without the text (a parsed body alone): the object, no rawArguments, as before', () => {
    const [a] = calls(gemini.parseResponse(JSON.parse(body), {}).content)
    expect(a?.arguments).toEqual({ id: Number(TWEET), tag: 'x' })
    expect(a?.rawArguments).toBeUndefined()
  })

  it('sets no rawArguments where parsing changed nothing (2^53 itself, 1e20, digits in a string)', () => {
    for (const written of ['{"n":9007199254740992}', '{"n":1e20}', `{"id":"${TWEET}"}`]) {
      const [a] = calls(gemini.parseResponse(chunk([call('a')], true, [written]), {}).content)
      expect(a?.rawArguments).toBeUndefined()
    }
  })

  it('finds each call by its part, whatever the spacing, escapes, strings and repeated keys around it', () => {
    const text = [
      '{ "candidates" : [ { "index": 0, "content" : { "role": "model", "parts" : [',
      '    { "text": "a } ] \\" { [ , args functionCall" },',
      '    { "thoughtSignature": "c2ln", "functionCall" : { "name": "f",',
      `      "args" : { "s": "}{\\"", "nested": { "ids": [ ${ORDER}, 1 ] } } } },`,
      `    { "functionCall": { "name": "g", "\\u0061rgs": {"id": ${TWEET}} } },`,
      `    { "functionCall": { "name": "h", "args": {"x": 1}, "args": {"id": -${TWEET}} } }`,
      '  ] }, "finishReason": "STOP" },',
      `  { "content": { "parts": [ { "functionCall": { "name": "z", "args": {"id": ${TWEET}} } } ] } } ],`,
      '  "candidates_note": [1] }',
    ].join('\n')
    const [f, g, h] = calls(gemini.parseResponse(text, {}).content)
    expect(f?.rawArguments).toBe(`{ "s": "}{\\"", "nested": { "ids": [ ${ORDER}, 1 ] } }`)
    expect(g?.rawArguments).toBe(`{"id": ${TWEET}}`)
    // A repeated key is the last one, as JSON.parse reads it.
    expect(h?.rawArguments).toBe(`{"id": -${TWEET}}`)
  })

  it('SSE stream: each call is one delta of its args as written, several calls in one chunk', () => {
    const events = streamed([
      chunk([{ text: 'Looking.' }], false),
      chunk([call('a'), call('b')], false, args.slice(0, 2)),
      chunk([{ text: '' }, call('c')], true, args.slice(2)),
    ])
    expect(argumentTexts(events)).toEqual([args[0], '{"n":7}', args[2]])
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool_calls' })
  })

  it('SSE stream: a chunk whose args parsing changed nothing is written from the object, as before', () => {
    const events = streamed([chunk([call('a')], true, ['{ "n" : 9007199254740992 }'])])
    expect(argumentTexts(events)).toEqual(['{"n":9007199254740992}'])
  })

  it('JSON-array stream (no alt=sse): each call keeps its args as written, by chunk and part', () => {
    const array = `[${[
      chunk([{ text: 'Look' }], false),
      chunk([{ text: 'ing.' }, call('a')], false, args.slice(0, 1)),
      chunk([call('b'), call('c')], true, args.slice(1)),
    ].join(',\r\n')}]`
    for (const response of [
      gemini.parseResponse(array, {}),
      gemini.parseResponse(JSON.parse(array), { text: array }),
    ]) {
      expect(response.text).toBe('Looking.')
      const [a, b, c] = calls(response.content)
      expect([a?.name, b?.name, c?.name]).toEqual(['a', 'b', 'c'])
      expect([a?.rawArguments, b?.rawArguments, c?.rawArguments]).toEqual([
        args[0],
        undefined,
        args[2],
      ])
    }
  })
})

describe("the testkit's Gemini fake, args spliced as written (argumentsJson)", () => {
  let fake: FakeProvider | undefined
  afterEach(async () => {
    await fake?.close()
    fake = undefined
  })

  const written = [`{"id": ${TWEET}}`, '{"id": 7}', `{"ids": [${ORDER}, "${ORDER}"]}`]
  const post = async (f: FakeProvider, method: string) => {
    const res = await fetch(`${f.baseURL}/models/gemini-2.5-flash:${method}`, {
      method: 'POST',
      headers: { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    })
    return res.text()
  }

  it.each([
    ['generateContent', 'whole'],
    ['streamGenerateContent', 'JSON array'],
    ['streamGenerateContent?alt=sse', 'SSE'],
  ])('%s (%s): every call reads as written', async (method, form) => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('Looking.', {
        toolCalls: written.map((argumentsJson) => ({
          name: 'tweet',
          arguments: undefined,
          argumentsJson,
        })),
      }),
    })
    const body = await post(fake, method)
    if (form === 'SSE') {
      const data = body
        .split('\r\n\r\n')
        .filter((event) => event.startsWith('data: '))
        .map((event) => event.slice('data: '.length))
      expect(argumentTexts(streamed(data))).toEqual([written[0], '{"id":7}', written[2]])
    } else {
      const response = gemini.parseResponse(JSON.parse(body), { text: body })
      expect(calls(response.content).map((c) => c.rawArguments)).toEqual([
        written[0],
        undefined,
        written[2],
      ])
    }
  })
})
