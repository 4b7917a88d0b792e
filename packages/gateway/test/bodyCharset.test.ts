import type { FakeProvider } from '@hourglass/testkit'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * "A `charset` of `utf-16`, `utf-16le` or `utf-16be` is decoded as such":
 * the text reaches the provider as the client wrote it, in either byte order
 * (`utf-16` by its BOM, little-endian without one), and a body that is not
 * valid in its charset is refused, as invalid UTF-8 is, rather than sent
 * with U+FFFD in place of what the client wrote.
 */
describe('UTF-16 bodies', () => {
  let fake: FakeProvider
  let h: Harness
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['sk-charset-0001'])
    fake = p.fake
    h = await startHarness({ providers: { p: p.entry }, models: { m: fallback(['p', 'gpt-4o']) } })
  })
  afterAll(async () => {
    await h?.close()
    await fake?.close()
  })

  const TEXT = 'hi 你好 🙂'
  const json = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: TEXT }] })
  const le = (text: string) => Buffer.from(text, 'utf16le')
  const be = (text: string) => Buffer.from(text, 'utf16le').swap16()
  const BOM = '\ufeff'

  async function post(charset: string, body: Buffer) {
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': `application/json; charset=${charset}` },
      body,
    })
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> }
  }

  const lastContent = () =>
    (fake.requests.at(-1)?.body as { messages?: Array<{ content: string }> } | undefined)
      ?.messages?.[0]?.content

  it.each([
    ['utf-16le', le(json)],
    ['utf-16be', be(json)],
    ['utf-16', le(json)],
    ['utf-16', le(BOM + json)],
    ['utf-16', be(BOM + json)],
    // The WHATWG label many clients write for UTF-8 (it was a 415).
    ['utf8', Buffer.from(json)],
  ])('charset=%s (%#): the text reaches the provider as written', async (charset, body) => {
    const r = await post(charset, body)
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(lastContent()).toBe(TEXT)
  })

  it.each([
    ['a lone surrogate', le(json.replace('hi', '\ud800'))],
    ['an odd number of bytes', Buffer.concat([le(json), Buffer.from([0x20])])],
  ])('charset=utf-16le with %s: 400 naming the charset, nothing sent', async (_what, body) => {
    const before = fake.requests.length
    const r = await post('utf-16le', body)
    expect(r.status).toBe(400)
    expect(r.body['error']).toMatchObject({
      code: 'invalid_utf8',
      message: 'the body is not valid UTF-16LE',
    })
    expect(fake.requests.length).toBe(before)
  })

  it('a charset it does not read is a 415 naming it and what is read, nothing sent', async () => {
    const before = fake.requests.length
    const r = await post('us-ascii', Buffer.from(json))
    expect(r.status).toBe(415)
    expect(r.body['error']).toMatchObject({
      code: 'unsupported_encoding',
      message:
        'unsupported charset "us-ascii": send UTF-8 (or UTF-16, named utf-16, utf-16le or utf-16be)',
    })
    expect(fake.requests.length).toBe(before)
  })

  it('a Content-Encoding it does not decode is a 415 naming it, nothing sent', async () => {
    const before = fake.requests.length
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'x-compress' },
      body: json,
    })
    expect(res.statusCode).toBe(415)
    const body = (await res.body.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('unsupported_encoding')
    expect(body.error.message).toMatch(
      /^unsupported Content-Encoding "x-compress": send identity, gzip, deflate or br/,
    )
    expect(fake.requests.length).toBe(before)
  })
})
