import type { FakeProvider } from '@hourglass/testkit'
import express from 'express'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGateway } from '../src/index.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A body that is JSON but not an object (`[]`) names that problem: its 400
 * said `expected a JSON object (Content-Type: application/json)`, sending a
 * client whose Content-Type was right to look at its headers. The
 * Content-Type stays in the message where it is the problem: a body that
 * was not read as JSON.
 */
describe('a JSON body that is not an object', () => {
  let fake: FakeProvider
  let h: Harness
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['sk-shape-0001'])
    fake = p.fake
    h = await startHarness({ providers: { p: p.entry }, models: { m: fallback(['p', 'gpt-4o']) } })
  })
  afterAll(async () => {
    await h?.close()
    await fake?.close()
  })

  async function post(contentType: string, body: string) {
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    })
    return {
      status: res.statusCode,
      error: ((await res.body.json()) as { error: Record<string, unknown> }).error,
    }
  }

  it.each([
    ['[]', 'an array'],
    ['[{"model":"m","messages":[{"role":"user","content":"hi"}]}]', 'an array'],
  ])('%s: 400 naming an array, not the Content-Type, nothing sent', async (body, what) => {
    const before = fake.requests.length
    const r = await post('application/json', body)
    expect(r.status).toBe(400)
    expect(r.error).toMatchObject({
      code: 'invalid_request',
      param: 'body',
      message: `body: expected a JSON object with model and messages, got ${what}`,
    })
    expect(fake.requests.length).toBe(before)
  })

  it('a text/plain body still names the Content-Type expected', async () => {
    const r = await post('text/plain', '{}')
    expect(r.status).toBe(400)
    expect(r.error).toMatchObject({
      param: 'body',
      message: 'body: expected a JSON object (Content-Type: application/json)',
    })
  })

  it("an app's own body parser leaving a JSON number (strict: false): named as a number", async () => {
    const gateway = createGateway(
      {
        providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
        models: { m: fallback(['p', 'x']) },
      },
      { logger: () => {} },
    )
    const app = express()
    app.use(express.json({ strict: false }))
    app.use(gateway)
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    try {
      const { port } = server.address() as { port: number }
      const res = await request(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '1',
      })
      expect(res.statusCode).toBe(400)
      const body = (await res.body.json()) as { error: { message: string } }
      expect(body.error.message).toBe(
        'body: expected a JSON object with model and messages, got a number',
      )
    } finally {
      await gateway.close()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
