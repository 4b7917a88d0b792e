import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isProviderError } from '../../src/errors/ProviderError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { rawServer } from './support/rawServer.js'

const fakes = useFakes()
const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

/**
 * A provider (or the proxy in front of it) that reads the whole request,
 * then closes the connection after `waitMs` without any response headers:
 * a load balancer's idle cut of a long generation, or, at once, a
 * keep-alive connection closed as the request arrived.
 */
async function closingAfter(waitMs: number) {
  const requests: number[] = []
  const server = await rawServer((req: IncomingMessage, _res: ServerResponse) => {
    req.resume()
    req.on('end', () => {
      requests.push(Date.now())
      setTimeout(() => req.socket.destroy(), waitMs)
    })
  })
  servers.push(server)
  const adapter = fakes.adapter(
    openAICompatible({ baseURL: server.baseURL, apiKey: 'sk-test-0000', model: 'gpt-4o' }),
  )
  return { adapter, requests }
}

const request = { messages: [user('Write a long report.')], maxTokens: 2000 }
const retry = { maxAttempts: 3, delay: FAST_RETRIES, budgets: false as const }

describe('a connection closed before any response headers', () => {
  // As a headers timeout: the request had reached the provider, which was
  // most likely generating (and billing) it for those seconds; resending it
  // pays again, and the same cut ends it the same way.
  it('after the request was sent and a long wait: not resent to the same model (status 0, network, not retryable)', async () => {
    const { adapter, requests } = await closingAfter(2500)
    const error = await callModel({
      models: [adapter],
      request,
      retry,
      limits: { admission: false },
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    const cause = (error as { lastCause: unknown }).lastCause
    expect(isProviderError(cause)).toBe(true)
    expect(cause).toMatchObject({ kind: 'network', status: 0, retryable: false })
    expect(String((cause as Error).message)).toMatch(/not resent to this model/)
    expect(requests).toHaveLength(1)
  }, 20_000)

  it('after a long wait the next model is still asked', async () => {
    const { adapter, requests } = await closingAfter(2500)
    const backup = await fakes.start({ dialect: 'openai' })
    const answer = await callModel({
      models: [adapter, fakes.adapterFor('openai', backup.baseURL, 'gpt-4o-mini')],
      request,
      retry,
      limits: { admission: false },
    })
    expect(answer.text.length).toBeGreaterThan(0)
    expect(requests).toHaveLength(1)
    expect(backup.requests).toHaveLength(1)
  }, 20_000)

  // A close as the request arrives (a keep-alive connection the server had
  // just closed): nothing was generated, so the same model is asked again.
  it('at once after the request: retried on the same model', async () => {
    const { adapter, requests } = await closingAfter(0)
    const error = await callModel({
      models: [adapter],
      request,
      retry,
      limits: { admission: false },
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect((error as { lastCause: unknown }).lastCause).toMatchObject({
      kind: 'network',
      status: 0,
      retryable: true,
    })
    expect(requests).toHaveLength(3)
  })
})
