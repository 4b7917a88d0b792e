import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { reply, startFakeProvider } from '@hourglass/testkit'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// A `typeof fetch` slot (openai-node's `fetch` option, a variable typed as
// the global fetch) takes createFetch()'s fetch. Before, neither compiled:
// HourglassRequestInit's body and headers are undici's types, which the
// global RequestInit's (@types/node) are not assignable to (ArrayBufferView,
// Headers), and the answer is undici's Response, not the global one. The
// failing half is `npm run typecheck` (test/typecheck.test.ts), which checks
// this file; the calls below show the runtime took these values all along.
describe('createFetch in a slot typed as the global fetch', () => {
  const fetch = createFetch()
  const server = createServer((req, res) => {
    let bytes = 0
    req.on('data', (c: Buffer) => (bytes += c.length))
    req.on('end', () => {
      res.setHeader('content-type', 'application/json')
      res.end(
        JSON.stringify({
          id: 'c',
          object: 'chat.completion',
          created: 0,
          model: 'm',
          choices: [
            {
              index: 0,
              finish_reason: 'stop',
              message: { role: 'assistant', content: String(bytes) },
            },
          ],
        }),
      )
    })
  })
  let url = ''
  beforeAll(async () => {
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await fetch.close()
    server.close()
  })

  it('is a typeof globalThis.fetch, taking the global Headers and an ArrayBufferView body', async () => {
    const asGlobal: typeof globalThis.fetch = fetch
    const res = await asGlobal(`${url}/`, {
      method: 'POST',
      headers: new Headers({ 'content-type': 'application/octet-stream' }),
      body: new DataView(new ArrayBuffer(3)),
    })
    expect(await res.json()).toMatchObject({ choices: [{ message: { content: '3' } }] })
  })

  it("is openai-node's fetch option, and the deadline still rides with a call", async () => {
    const provider = await startFakeProvider({ dialect: 'openai', reply: reply.text('hello') })
    try {
      const client = new OpenAI({ apiKey: 'k', baseURL: provider.baseURL, fetch, maxRetries: 0 })
      const answer = await client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect(answer.choices[0]?.message.content).toBe('hello')
      expect(provider.requests).toHaveLength(1)
    } finally {
      await provider.close()
    }
    const direct = await fetch(`${url}/`, {
      deadline: Deadline.after(5000),
      headers: new Headers(),
    })
    expect(direct.status).toBe(200)
  })

  it('still refuses what no fetch takes', () => {
    // @ts-expect-error a number is no body
    const refused = () => fetch(`${url}/`, { method: 'POST', body: 5 })
    expect(typeof refused).toBe('function')
  })
})
