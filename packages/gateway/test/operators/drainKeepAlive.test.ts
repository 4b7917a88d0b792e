import { Agent, type IncomingMessage, request } from 'node:http'
import { ManualClock } from '@hourglass/core'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * A keep-alive client whose request is answered during a drain: told
 * `connection: close`, it opens a new connection for its next request
 * instead of reusing one the drain's end resets under it (ECONNRESET on a
 * request nobody answered or logged).
 */
describe('a drain and keep-alive clients', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  let agent: Agent | undefined
  afterEach(async () => {
    agent?.destroy()
    await harness?.close()
    await fake?.close()
    fake = undefined
    harness = undefined
    agent = undefined
  })

  it('the answer in flight says connection: close; the client’s next request does not go on that connection', async () => {
    // The provider's delay runs on a clock of its own: the answer comes when the test says.
    const providerClock = new ManualClock()
    fake = await startFakeProvider({ dialect: 'openai', clock: providerClock })
    harness = await startHarness({
      providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
      models: { m: fallback(['p', 'gpt']) },
    })
    const ka = new Agent({ keepAlive: true, maxSockets: 1 })
    agent = ka
    const { port } = new URL(harness.url)
    const post = () =>
      new Promise<{ res?: IncomingMessage; reused: boolean; error?: string }>((resolve) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: Number(port),
            method: 'POST',
            path: '/v1/chat/completions',
            agent: ka,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            res.resume()
            res.on('end', () => resolve({ res, reused: req.reusedSocket }))
          },
        )
        req.on('error', (error: NodeJS.ErrnoException) =>
          resolve({ reused: req.reusedSocket, error: error.code ?? error.message }),
        )
        req.end(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }))
      })

    // A first request on the connection, so the one in flight is on a reused keep-alive socket.
    const warm = await post()
    expect(warm.res?.headers.connection).toBe('keep-alive')
    fake.enqueue(reply.text('answered during the drain', { latencyMs: 1000 }))
    const inFlight = post()
    await fake.waitForRequests(2)
    const closing = harness.running.close()
    providerClock.advance(1000)
    const { res, reused } = await inFlight
    expect(reused).toBe(true)
    expect(res?.statusCode).toBe(200)
    expect(res?.headers.connection).toBe('close')
    // The client's next request, at once: on a new connection (refused: the
    // gateway no longer listens), never on the old one, reset under it.
    const next = await post()
    expect(next.reused).toBe(false)
    expect(next.error).toBe('ECONNREFUSED')
    await closing
  })
})
