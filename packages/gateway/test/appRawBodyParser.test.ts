import { Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import express, { type RequestHandler } from 'express'
import OpenAI from 'openai'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRouter } from '../src/index.js'
import { fallback } from './support/harness.js'

/**
 * Mounted in an app whose own body parser ran first for JSON bodies as
 * bytes or text — `express.raw({ type: 'application/json' })`, as apps
 * verifying webhook signatures mount it, or `express.text(…)` — a
 * well-formed chat request was refused: 400 `model: expected a string` (the
 * Buffer read as an object) or `body: expected a JSON object`, blaming a
 * client whose request was right. The JSON the client sent is read from
 * those bytes or that text with the gateway's own checks.
 */
describe("an app's own raw or text body parser ahead of the gateway", () => {
  let fake: FakeProvider
  const running: Array<{ gateway: GatewayRouter; server: import('node:http').Server }> = []

  beforeAll(async () => {
    fake = await startFakeProvider({ dialect: 'openai' })
  })
  afterAll(async () => {
    for (const { gateway, server } of running) {
      await gateway.close()
      await new Promise((resolve) => server.close(resolve))
    }
    await fake?.close()
  })

  async function appWith(parser: RequestHandler, maxBodyBytes?: number): Promise<string> {
    const gateway = createGateway(
      {
        providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['sk-raw-0001'] } },
        models: { m: fallback(['p', 'gpt-4o']) },
      },
      { logger: () => {}, maxBodyBytes },
    )
    const app = express()
    app.use(parser)
    app.use(gateway)
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    running.push({ gateway, server })
    return `http://127.0.0.1:${(server.address() as { port: number }).port}`
  }

  const parsers: Array<[string, () => RequestHandler]> = [
    ['express.raw', () => express.raw({ type: 'application/json' })],
    ['express.text', () => express.text({ type: 'application/json' })],
  ]

  it.each(parsers)('%s: the official client is answered', async (_name, parser) => {
    const url = await appWith(parser())
    fake.enqueue(reply.text('answered'))
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 })
    const answer = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(answer.choices[0]?.message.content).toBe('answered')
  })

  it.each(parsers)('%s: a bad body gets the 400 it would without it', async (_name, parser) => {
    const url = await appWith(parser())
    const before = fake.requests.length
    const post = async (body: string) => {
      const res = await request(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      return { status: res.statusCode, error: ((await res.body.json()) as { error: object }).error }
    }
    expect(await post('{"model": "m", "messages": [')).toMatchObject({
      status: 400,
      error: { code: 'invalid_json' },
    })
    expect(await post('[]')).toMatchObject({
      status: 400,
      error: { param: 'body', message: expect.stringContaining('got an array') },
    })
    expect(await post('{"model": 1, "messages": []}')).toMatchObject({
      status: 400,
      error: { param: 'model' },
    })
    expect(fake.requests.length).toBe(before)
  })

  it('express.raw: bytes that are not UTF-8 are refused as the gateway refuses them', async () => {
    const url = await appWith(express.raw({ type: 'application/json' }))
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.concat([
        Buffer.from('{"model":"m","messages":[{"role":"user","content":"'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}]}'),
      ]),
    })
    expect(res.statusCode).toBe(400)
    expect(((await res.body.json()) as { error: { code: string } }).error.code).toBe('invalid_utf8')
  })

  // body-parser's text parser decodes any charset iconv-lite knows, and the
  // size it kept is the decoded text's: what the client sent is measured by
  // its Content-Length, and a charset the gateway refuses is still refused.
  it('express.text: a charset the gateway refuses is a 415, as without it', async () => {
    const url = await appWith(express.text({ type: 'application/json' }))
    const before = fake.requests.length
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=iso-8859-1' },
      body: Buffer.from(
        '{"model":"m","messages":[{"role":"user","content":"caf\u00e9"}]}',
        'latin1',
      ),
    })
    expect(res.statusCode).toBe(415)
    expect(((await res.body.json()) as { error: { code: string } }).error.code).toBe(
      'unsupported_encoding',
    )
    expect(fake.requests.length).toBe(before)
  })

  it('express.text: a UTF-16 body past maxBodyBytes is a 413 (its bytes, not its decoded text)', async () => {
    const url = await appWith(express.text({ type: 'application/json' }), 1000)
    const body = (content: string) =>
      Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }), 'utf16le')
    const before = fake.requests.length
    const big = body('x'.repeat(600))
    expect(big.length).toBe(1310) // 655 bytes as UTF-8
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-16le' },
      body: big,
    })
    expect(res.statusCode).toBe(413)
    expect(((await res.body.json()) as { error: { code: string } }).error.code).toBe(
      'request_too_large',
    )
    expect(fake.requests.length).toBe(before)
    // Sent chunked (no Content-Length) or gzipped, the same bytes are the same 413.
    const chunked = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-16le' },
      body: Readable.from([big.subarray(0, 700), big.subarray(700)]),
    })
    expect(chunked.statusCode).toBe(413)
    await chunked.body.dump()
    const gzipped = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-16le', 'content-encoding': 'gzip' },
      body: gzipSync(big),
    })
    expect(gzipped.statusCode).toBe(413)
    await gzipped.body.dump()
    expect(fake.requests.length).toBe(before)
    // One under the limit is answered: UTF-16 is a charset the gateway takes.
    fake.enqueue(reply.text('answered'))
    const small = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-16le' },
      body: body('caf\u00e9'),
    })
    expect(small.statusCode).toBe(200)
    await small.body.dump()
    expect(fake.requests.at(-1)?.body).toMatchObject({
      messages: [{ role: 'user', content: 'caf\u00e9' }],
    })
  })

  it.each([
    ['express.raw', () => express.raw({ type: '*/*' })],
    ['express.text', () => express.text({ type: '*/*' })],
  ] as Array<[string, () => RequestHandler]>)(
    '%s for every type: a body that is not JSON gets the Content-Type message, as without it',
    async (_name, parser) => {
      const url = await appWith(parser())
      const before = fake.requests.length
      const res = await request(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: '{"model":"m","messages":[{"role":"user","content":"hi"}]}',
      })
      expect(res.statusCode).toBe(400)
      expect(((await res.body.json()) as { error: object }).error).toEqual({
        message: 'body: expected a JSON object (Content-Type: application/json)',
        type: 'invalid_request_error',
        param: 'body',
        code: 'invalid_request',
      })
      expect(fake.requests.length).toBe(before)
    },
  )

  it.each(parsers)("%s: the gateway's maxBodyBytes still holds", async (_name, parser) => {
    const url = await appWith(parser(), 1000)
    const before = fake.requests.length
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(2000) }] }),
    })
    expect(res.statusCode).toBe(413)
    expect(((await res.body.json()) as { error: { code: string } }).error.code).toBe(
      'request_too_large',
    )
    expect(fake.requests.length).toBe(before)
  })
})
