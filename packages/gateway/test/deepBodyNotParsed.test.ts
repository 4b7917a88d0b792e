import { reply } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { MAX_BODY_DEPTH, tooDeepField } from '../src/http/jsonDepthLimit.js'
import { oneProviderGateway } from './support/oneProviderGateway.js'

const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)

/**
 * A body within the size limit can nest millions of levels (4 MiB of `[`):
 * `JSON.parse` built every level — 1.3 s of a blocked event loop and 55 MB
 * for two million — before the depth check could refuse it, so any client
 * could stall every other request the gateway was serving. Refused now
 * before the parse, naming the top-level field it is in.
 */
describe('a body nested past the gateway’s depth limit', () => {
  const gateway = oneProviderGateway()
  let fake: Awaited<ReturnType<typeof gateway.one>>
  beforeAll(async () => {
    fake = await gateway.one('openai')
  })
  afterAll(() => gateway.close())

  async function post(body: string) {
    const res = await fetch(`${gateway.harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    return {
      status: res.status,
      error: ((await res.json()) as { error?: Record<string, unknown> }).error,
    }
  }

  it('is refused 400 naming its field, and never parsed', async () => {
    const body = `{"model":"m","messages":${deep(2_000_000)}}`
    const parse = vi.spyOn(JSON, 'parse')
    const { status, error } = await post(body)
    const parsedIt = parse.mock.calls.some(([text]) => text === body)
    parse.mockRestore()
    expect(status, JSON.stringify(error)).toBe(400)
    expect(error).toMatchObject({
      param: 'messages',
      code: 'invalid_request',
      message: `messages: nested deeper than ${MAX_BODY_DEPTH} levels (free-form JSON may nest 64)`,
    })
    expect(parsedIt, 'JSON.parse was given the body').toBe(false)
  })

  it('a body that is itself a deep array is refused as the body', async () => {
    const { status, error } = await post(deep(300_000))
    expect(status).toBe(400)
    expect(error).toMatchObject({ param: 'body' })
  })

  it('a depth the schema judges (past 64, within the limit) still gets its precise path', async () => {
    const { status, error } = await post(
      `{"model":"m","messages":[{"role":"user","content":"hi"}],"x":${deep(100)}}`,
    )
    expect(status).toBe(400)
    expect(error?.['param']).toBe('x')
    expect(error?.['message']).toMatch(/^x: nested deeper than 64 levels/)
  })

  it('brackets inside strings do not count: such a message is answered', async () => {
    fake.enqueue(reply.text('ok'))
    const content = '['.repeat(10_000) + '{\\"'.repeat(1000)
    const res = await fetch(`${gateway.harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"model":"m","messages":[{"role":"user","content":"${content}"}]}`,
    })
    expect(res.status).toBe(200)
  })
})

describe('tooDeepField', () => {
  it('names the top-level key the excess is in, decoded', () => {
    expect(tooDeepField(`{"a":1,"b\\u0063":${deep(MAX_BODY_DEPTH)}}`)).toBe('bc')
    expect(tooDeepField(`{"a":1,"b":${deep(MAX_BODY_DEPTH - 1)}}`)).toBeUndefined()
    expect(tooDeepField(`{"a":{"k":${deep(MAX_BODY_DEPTH)}}}`)).toBe('a')
  })

  it('reads an escaped quote as part of its string, and a string value at the top as no key', () => {
    expect(tooDeepField(`{"m":"x\\"[[[","z":${deep(MAX_BODY_DEPTH)}}`)).toBe('z')
    expect(tooDeepField(`{"m":"v",${'['.repeat(MAX_BODY_DEPTH)}`)).toBe('body')
  })

  it('leaves text that is not JSON to the parse', () => {
    expect(tooDeepField(`{"a":"unterminated ${'['.repeat(1000)}`)).toBeUndefined()
  })
})
