import {
  anthropicErrors,
  deepseekErrors,
  doubaoErrors,
  type ErrorReply,
  ernieErrors,
  geminiErrors,
  openAIErrors,
  qwenErrors,
} from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import type { DialectName } from '../../src/dialects/Dialect.js'
import { dialects } from '../../src/dialects/dialects.js'
import { errorOver } from './support/errorOver.js'

/**
 * An error answer to a streaming request may come SSE-framed (`data: {…}`,
 * DashScope's 400 for a filtered input): it is read as the JSON it frames,
 * in every dialect, so the provider's code decides — as for the same body
 * sent plain.
 */

const sse = (body: unknown) => `data: ${JSON.stringify(body)}\n\n`

const CASES: ReadonlyArray<readonly [DialectName, ErrorReply]> = [
  ['openai', openAIErrors.contentPolicy()],
  ['openai', openAIErrors.contextTooLong()],
  ['deepseek', deepseekErrors.insufficientBalance()],
  ['qwen', qwenErrors.compatibleDataInspectionFailed()],
  ['qwen', qwenErrors.dataInspectionFailed()],
  ['qwen', qwenErrors.compatibleTokenLimited()],
  ['ernie', ernieErrors.v2RateLimited('tpm')],
  ['doubao', doubaoErrors.accountOverdue()],
  ['anthropic', anthropicErrors.promptTooLong()],
  ['anthropic', anthropicErrors.authentication()],
  ['gemini', geminiErrors.invalidApiKey()],
  ['gemini', geminiErrors.contextTooLong()],
]

describe('an SSE-framed error body is read as the JSON it frames', () => {
  it.each(CASES)('%s: %# the same verdict as the plain JSON body', async (name, real) => {
    const d = dialects[name]
    const plain = d.normalizeError({ status: real.status, body: JSON.stringify(real.body) })
    expect(plain?.providerCode).toBeDefined()
    const framed = d.normalizeError(
      await errorOver(real.status, sse(real.body), { 'content-type': 'text/event-stream' }),
    )
    expect(framed).toEqual(plain)
  })

  it("qwen: a filtered streaming request's 400 is content_policy with the provider's code and message", () => {
    const body = sse(qwenErrors.compatibleDataInspectionFailed().body)
    expect(dialects.qwen.normalizeError({ status: 400, body })).toEqual({
      kind: 'content_policy',
      retryable: false,
      status: 400,
      providerCode: 'data_inspection_failed',
      message: 'Input data may contain inappropriate content.',
    })
  })

  it.each([
    ['no space after the colon, CRLF lines, no final blank line', (j: string) => `data:${j}\r\n`],
    ['a leading blank line and a BOM', (j: string) => `\ufeff\ndata: ${j}\n\n`],
    [
      'DashScope native framing (id, event, status comment)',
      (j: string) => `id:1\nevent:error\n:HTTP_STATUS/400\ndata:${j}\n\n`,
    ],
    [
      'the JSON split over several data lines',
      (j: string) => `data: ${j.slice(0, 9)}\ndata: ${j.slice(9)}\n\n`,
    ],
    [
      'an event without JSON first, then the error',
      (j: string) => `event: ping\ndata: keep-alive\n\ndata: ${j}\n\n`,
    ],
    ['the error, then [DONE]', (j: string) => `data: ${j}\n\ndata: [DONE]\n\n`],
  ])('framing variants: %s', (_, frame) => {
    const json = JSON.stringify(qwenErrors.compatibleDataInspectionFailed().body)
    expect(dialects.qwen.normalizeError({ status: 400, body: frame(json) })).toMatchObject({
      kind: 'content_policy',
      providerCode: 'data_inspection_failed',
      message: 'Input data may contain inappropriate content.',
    })
  })

  it('a body that is not SSE, or frames no JSON, still classifies by status, as before', () => {
    for (const body of [
      'data: not json\n\n',
      'data: [DONE]\n\n',
      'Bad Request\ndata: {"error":{"code":"data_inspection_failed"}}',
      'data:',
      '',
    ]) {
      expect(dialects.qwen.normalizeError({ status: 400, body })).toMatchObject({
        kind: 'bad_request',
        status: 400,
      })
    }
    // A web page is not SSE either: a proxy's page, in front of the provider.
    expect(
      dialects.qwen.normalizeError({ status: 400, body: '<html>data: {}</html>' }),
    ).toMatchObject({
      kind: 'server_error',
      status: 400,
    })
  })

  it('only the first eight events with data are tried: a hostile body of many non-JSON events costs eight parses', () => {
    const json = JSON.stringify(qwenErrors.compatibleDataInspectionFailed().body)
    const events = (n: number) => `${'data: {\n\n'.repeat(n)}data: ${json}\n\n`
    expect(dialects.qwen.normalizeError({ status: 400, body: events(7) })).toMatchObject({
      kind: 'content_policy',
    })
    expect(dialects.qwen.normalizeError({ status: 400, body: events(8) })).toMatchObject({
      kind: 'bad_request',
    })
  })

  it('an SSE-framed 2xx body is not read as an error body (a stream is read by the stream parser)', () => {
    const body = sse(qwenErrors.compatibleDataInspectionFailed().body)
    expect(dialects.qwen.normalizeError({ status: 200, body })).toBeUndefined()
  })
})
