import type { Server } from 'node:http'
import { ManualClock } from '@hourglass/core'
import { deadline, deadlineErrors } from '@hourglass/express'
import type { FakeProvider } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRouter } from '../src/index.js'
import { fakeProvider, fallback } from './support/harness.js'

/**
 * An app's own deadline() ahead of the mounted gateway owns the request, and
 * the gateway's steps aside. In dark mode (`mode: 'observe'`, the way an app
 * adopts deadlines) that owner enforces nothing, and the gateway's handler
 * deadline, a child of it, inherited `observe`: a provider that hung was
 * never cut — not at the app's default, not at the gateway's own
 * `deadline.defaultMs` — and the request waited on until its client gave up
 * (or the upstream's 600 s header timeout).
 */
describe("an app's deadline() in dark mode ahead of the gateway", () => {
  let fake: FakeProvider | undefined
  let server: Server | undefined
  let gateway: GatewayRouter | undefined
  afterEach(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined))
    await gateway?.close()
    await fake?.close()
    server = undefined
    gateway = undefined
    fake = undefined
  })

  it("still ends a hung provider's call at the gateway's deadline.defaultMs, with its 504", async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    fake.setReply({ kind: 'hang' })
    const clock = new ManualClock()
    gateway = createGateway(
      {
        providers: { o: provider.entry },
        models: { m: fallback(['o', 'gpt']) },
        deadline: { defaultMs: 1000 },
      },
      { clock, logger: () => {} },
    )
    const app = express()
    app.use(deadline({ defaultMs: 100, mode: 'observe', clock }))
    app.use(express.json())
    app.use('/llm', gateway)
    app.use(deadlineErrors())
    const listening = app.listen(0, '127.0.0.1')
    server = listening
    await new Promise((resolve) => listening.once('listening', resolve))
    const { port } = listening.address() as { port: number }
    const answer = fetch(`http://127.0.0.1:${port}/llm/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(5000),
    })
    await fake.waitForRequests(1)
    // Past the app's (observed) 100 ms and the gateway's own 1000 ms.
    clock.advance(1000)
    const res = await answer
    expect(res.status).toBe(504)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('deadline_exceeded')
  })
})
