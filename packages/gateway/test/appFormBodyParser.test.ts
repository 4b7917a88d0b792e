import type { Server } from 'node:http'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import express, { type RequestHandler } from 'express'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRouter } from '../src/index.js'
import { fallback } from './support/harness.js'

/**
 * Express's boilerplate parsers ahead of the gateway — `express.json()` and
 * `express.urlencoded()` for every path — left the chat handler an object it
 * took as the client's JSON: a `curl -d '{"model": …}'` without `-H
 * 'content-type: application/json'` (curl sends a form) was refused
 * `model: expected a string` (the JSON text read as one form field's name),
 * and an empty body (`{}` to body-parser) the same, where `startGateway`
 * says the Content-Type is wrong, or the body empty.
 */
describe("an app's own form or JSON parser ahead of the gateway", () => {
  let fake: FakeProvider
  const running: Array<{ gateway: GatewayRouter; server: Server }> = []

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

  async function appWith(...parsers: RequestHandler[]): Promise<string> {
    const gateway = createGateway(
      {
        providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['sk-form-0001'] } },
        models: { m: fallback(['p', 'gpt-4o']) },
      },
      { logger: () => {} },
    )
    const app = express()
    for (const parser of parsers) app.use(parser)
    app.use(gateway)
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    running.push({ gateway, server })
    return `http://127.0.0.1:${(server.address() as { port: number }).port}`
  }

  async function post(url: string, body: string, contentType: string) {
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    })
    return { status: res.statusCode, error: ((await res.body.json()) as { error: object }).error }
  }

  const chat = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })

  it('a JSON body sent as a form (curl -d) is told its Content-Type, not a missing model', async () => {
    const url = await appWith(express.json(), express.urlencoded({ extended: true }))
    const before = fake.requests.length
    expect(await post(url, chat, 'application/x-www-form-urlencoded')).toEqual({
      status: 400,
      error: {
        message: 'body: expected a JSON object (Content-Type: application/json)',
        type: 'invalid_request_error',
        param: 'body',
        code: 'invalid_request',
      },
    })
    expect(fake.requests.length).toBe(before)
  })

  it('an empty body express.json() read as {} is said to be empty', async () => {
    const url = await appWith(express.json())
    expect(await post(url, '', 'application/json')).toMatchObject({
      status: 400,
      error: {
        param: 'body',
        code: 'invalid_request',
        message: expect.stringContaining('the body is empty'),
      },
    })
    // A client that sent `{}` itself still hears what its body lacks.
    expect(await post(url, '{}', 'application/json')).toMatchObject({
      status: 400,
      error: { param: 'model' },
    })
  })

  it('a JSON body the app parsed whatever its type (express.json({ type: "*/*" })) is still answered', async () => {
    const url = await appWith(express.json({ type: '*/*' }))
    fake.enqueue(reply.text('answered'))
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: chat,
    })
    expect(res.statusCode).toBe(200)
    const answer = (await res.body.json()) as { choices: Array<{ message: { content: string } }> }
    expect(answer.choices[0]?.message.content).toBe('answered')
  })
})
