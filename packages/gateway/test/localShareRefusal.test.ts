import type { AddressInfo } from 'node:net'
import { type FakeProvider, openAIErrors, startFakeProvider } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRouter } from '../src/index.js'

/**
 * A Redis client that is down (closed, as ioredis says after `disconnect()`):
 * every limit is this instance's share, every command fails at once.
 */
const down = {
  status: 'end',
  eval: () => Promise.reject(new Error('Connection is closed.')),
  evalsha: () => Promise.reject(new Error('Connection is closed.')),
}

/**
 * While Redis is down, each instance allows `floor(tpm / instances)`: a
 * request estimated above that share is refused at once, no wait helping.
 * The client is told which limit it met — this instance's share of the TPM
 * limit, while Redis is unavailable, with both numbers — not that it
 * exceeds "the token limit", which it does not.
 */
describe("a request over this instance's TPM share while Redis is down", () => {
  let fake: FakeProvider | undefined
  let gateway: GatewayRouter | undefined
  let server: ReturnType<ReturnType<typeof express>['listen']> | undefined
  afterEach(async () => {
    await gateway?.close()
    server?.close()
    await fake?.close()
  })

  async function start(
    fallbackTo: string[],
    tpm: Record<string, number | undefined> = { p: 1000 },
  ) {
    fake = await startFakeProvider({ dialect: 'openai' })
    const provider = (limit: number | undefined) => ({
      dialect: 'openai',
      baseURL: fake!.baseURL,
      apiKeys: ['sk-share-key-0001'],
      ...(limit === undefined ? {} : { limits: { tpm: limit } }),
    })
    gateway = createGateway(
      {
        providers: { p: provider(tpm['p']), q: provider(tpm['q']) },
        models: { m: { fallback: fallbackTo.map((name) => ({ provider: name, model: 'x' })) } },
        limits: { instances: 3 },
        // No retry of q's failure (and no back-off to wait through).
        policy: { maxAttempts: 1 },
      },
      { redis: down, logger: () => {} },
    )
    server = express().use(gateway).listen(0, '127.0.0.1')
    await new Promise((resolve) => server!.once('listening', resolve))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }

  const ask = (url: string) =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // ~500 tokens estimated (the prompt and max_tokens): over a share of 333, under the limit of 1000.
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 500,
      }),
    })

  it('gets a 429 naming the share, the limit and Redis being unavailable, and no Retry-After', async () => {
    const url = await start(['p'])
    const res = await ask(url)
    expect(res.status).toBe(429)
    expect(res.headers.get('x-should-retry')).toBe('false')
    expect(res.headers.get('retry-after')).toBeNull()
    const { error } = (await res.json()) as { error: { message: string; code: string } }
    expect(error.code).toBe('rate_limit_exceeded')
    expect(error.message).toMatch(
      /^p: the request alone \(\d+ tokens\) exceeds this process's share of the TPM limit while Redis is unavailable: 333 of 1000 tokens \(1 of 3 instances\)$/,
    )
    expect(fake!.requests).toEqual([])
  })

  it('refused beside a provider that failed, the summary names the refusal the same way', async () => {
    // p over its share (nothing sent), then q, unlimited, failing.
    const url = await start(['p', 'q'])
    fake!.setReply(openAIErrors.serverError())
    const res = await ask(url)
    expect(res.status).toBe(502)
    const { error } = (await res.json()) as { error: { message: string } }
    expect(error.message).toMatch(
      /\(p: the request alone \(\d+ tokens\) exceeds this process's share of the TPM limit while Redis is unavailable: 333 of 1000 tokens \(1 of 3 instances\); /,
    )
    expect(error.message).toContain('q/x: server error')
    expect(fake!.requests.length).toBe(1)
  })
})
