import type { Server } from 'node:http'
import type { FakeProvider } from '@hourglass/testkit'
import express from 'express'
import express4 from 'express4'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRouter, type LogRecord } from '../../src/index.js'
import { fakeProvider, fallback } from '../support/harness.js'

/**
 * Mounted under a prefix (`app.use('/llm', gateway)`), the `request` line's
 * `path` is the path the client sent, `/llm/v1/…` (Express's
 * `req.originalUrl`): it was the path relative to the mount, `/v1/…`, which
 * no client asked for and no access log of the app's shows.
 */
describe.each([
  ['Express 5', () => express()],
  ['Express 4', () => express4()],
])('%s: the gateway mounted at /llm logs the path the client sent', (_name, makeApp) => {
  let fake: FakeProvider
  let gateway: GatewayRouter
  let server: Server
  let base: string
  const logs: LogRecord[] = []
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['sk-mounted-0001'])
    fake = p.fake
    gateway = createGateway(
      { providers: { p: p.entry }, models: { m: fallback(['p', 'gpt-4o']) } },
      { logger: (record) => logs.push(record) },
    )
    const app = makeApp()
    app.use('/llm', gateway)
    server = app.listen(0, '127.0.0.1') as Server
    await new Promise((resolve) => server.once('listening', resolve))
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  })
  afterAll(async () => {
    await gateway?.close()
    await new Promise((resolve) => server?.close(resolve))
    await fake?.close()
  })

  async function send(method: string, path: string, body?: string) {
    const res = await request(`${base}${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body }),
    })
    await res.body.dump()
    const id = res.headers['x-request-id']
    const line = logs.find((r) => r.event === 'request' && r.requestId === id)
    return { status: res.statusCode, path: line?.['path'] }
  }

  it('a chat completion, a 400, the model list with a query, a 404 model, a 405', async () => {
    const chat = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
    expect(await send('POST', '/llm/v1/chat/completions', chat)).toEqual({
      status: 200,
      path: '/llm/v1/chat/completions',
    })
    expect(await send('POST', '/llm/v1/chat/completions', '[]')).toEqual({
      status: 400,
      path: '/llm/v1/chat/completions',
    })
    expect(await send('GET', '/llm/v1/models?limit=1')).toEqual({
      status: 200,
      path: '/llm/v1/models',
    })
    expect(await send('GET', '/llm/v1/models/nope')).toEqual({
      status: 404,
      path: '/llm/v1/models/nope',
    })
    expect(await send('DELETE', '/llm/v1/models')).toEqual({
      status: 405,
      path: '/llm/v1/models',
    })
  })

  it("after close(), the drain's 503 alike", async () => {
    await gateway.close()
    expect(await send('GET', '/llm/v1/models')).toEqual({ status: 503, path: '/llm/v1/models' })
  })
})
