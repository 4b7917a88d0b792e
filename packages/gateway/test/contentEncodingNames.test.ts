import * as zlib from 'node:zlib'
import type { FakeProvider } from '@hourglass/testkit'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * The Content-Encoding names a request body may carry beyond the plain ones:
 * `x-gzip`, which RFC 9110 §8.4.1.3 says a recipient SHOULD read as `gzip`
 * (it was a 415), and an empty field value — a list of no codings, so
 * identity, as body-parser reads it (it was a 415 naming `""`). `x-compress`
 * stays a 415: it names `compress` (LZW), which the gateway does not decode.
 */
describe('Content-Encoding names', () => {
  let fake: FakeProvider
  let h: Harness
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['sk-encoding-0001'])
    fake = p.fake
    h = await startHarness(
      { providers: { p: p.entry }, models: { m: fallback(['p', 'gpt-4o']) } },
      { maxBodyBytes: 1000 },
    )
  })
  afterAll(async () => {
    await h?.close()
    await fake?.close()
  })

  const TEXT = 'hi 你好'
  const json = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: TEXT }] })

  async function post(encoding: string, body: Buffer | string) {
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': encoding },
      body,
    })
    return {
      status: res.statusCode,
      body: (await res.body.json()) as { error?: { code: string; message: string } },
    }
  }
  const lastContent = () =>
    (fake.requests.at(-1)?.body as { messages?: Array<{ content: string }> } | undefined)
      ?.messages?.[0]?.content

  it.each(['x-gzip', 'X-GZIP'])('%s is read as gzip', async (encoding) => {
    const r = await post(encoding, zlib.gzipSync(json))
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(lastContent()).toBe(TEXT)
  })

  it('an x-gzip body inflating past maxBodyBytes is a 413, as a gzip one', async () => {
    const big = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'x'.repeat(5000) }],
    })
    const r = await post('x-gzip', zlib.gzipSync(big))
    expect(r.status).toBe(413)
    expect(r.body.error?.code).toBe('request_too_large')
  })

  it('an empty Content-Encoding is identity', async () => {
    const r = await post('', json)
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(lastContent()).toBe(TEXT)
  })

  it('an empty Content-Encoding with a Content-Length past maxBodyBytes is a 413', async () => {
    const r = await post('', json.replace(TEXT, 'x'.repeat(5000)))
    expect(r.status).toBe(413)
    expect(r.body.error?.code).toBe('request_too_large')
  })

  it('x-compress (compress, LZW: not decoded) is still a 415 naming it, nothing sent', async () => {
    const before = fake.requests.length
    const r = await post('x-compress', json)
    expect(r.status).toBe(415)
    expect(r.body.error?.code).toBe('unsupported_encoding')
    expect(r.body.error?.message).toMatch(
      /^unsupported Content-Encoding "x-compress": send identity, gzip/,
    )
    expect(fake.requests.length).toBe(before)
  })

  // zstd where Node has it (22.15 and later; Node 20 answers its 415).
  // Typed by hand: the @types/node of Node 20 has no zstd.
  const zstd = zlib as unknown as {
    zstdCompressSync?: (data: string, options?: { params: Record<number, number> }) => Buffer
    constants: Record<string, number>
  }
  it.runIf(zstd.zstdCompressSync !== undefined)(
    'a corrupt zstd body is a 400 invalid_encoding, as a corrupt gzip one, nothing sent',
    async () => {
      // A frame whose checksum is wrong, and plain JSON labelled zstd (no frame at all).
      const checked = { params: { [zstd.constants.ZSTD_c_checksumFlag as number]: 1 } }
      const flipped = Buffer.from(zstd.zstdCompressSync?.(json, checked) as Buffer)
      flipped[flipped.length - 1] = (flipped[flipped.length - 1] as number) ^ 0xff
      const before = fake.requests.length
      for (const body of [json, flipped]) {
        const r = await post('zstd', body)
        expect(r.status, JSON.stringify(r.body)).toBe(400)
        expect(r.body.error?.code).toBe('invalid_encoding')
      }
      expect(fake.requests.length).toBe(before)
    },
  )
})
