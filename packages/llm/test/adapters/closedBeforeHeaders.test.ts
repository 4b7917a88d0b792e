import type { IncomingMessage, ServerResponse } from 'node:http'
import { type Clock, Deadline, systemClock } from '@hourglass/core'
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
 * The system clock, jumped forward by hand (`jump`): its timers (a retry's
 * backoff) stay real; a wait the test makes long costs no real time.
 */
function jumpingClock(): Clock & { jump(ms: number): void } {
  let jumpedMs = 0
  return {
    now: () => systemClock.now() + jumpedMs,
    setTimeout: (callback, ms, options) => systemClock.setTimeout(callback, ms, options),
    clearTimeout: (handle) => systemClock.clearTimeout(handle),
    jump(ms) {
      jumpedMs += ms
    },
  }
}

/**
 * A provider (or the proxy in front of it) that reads the whole request,
 * then closes the connection `waitMs` later on the call's clock (`deadline`)
 * without any response headers: a load balancer's idle cut of a long
 * generation, or, at once, a keep-alive connection closed as the request
 * arrived.
 */
async function closingAfter(waitMs: number) {
  const requests: number[] = []
  const clock = jumpingClock()
  const server = await rawServer((req: IncomingMessage, _res: ServerResponse) => {
    req.resume()
    req.on('end', () => {
      requests.push(Date.now())
      setImmediate(() => {
        clock.jump(waitMs)
        req.socket.destroy()
      })
    })
  })
  servers.push(server)
  const adapter = fakes.adapter(
    openAICompatible({ baseURL: server.baseURL, apiKey: 'sk-test-0000', model: 'gpt-4o' }),
  )
  return { adapter, requests, deadline: Deadline.after(600_000, { clock }) }
}

const request = { messages: [user('Write a long report.')], maxTokens: 2000 }
const retry = { maxAttempts: 3, delay: FAST_RETRIES, budgets: false as const }

describe('a connection closed before any response headers', () => {
  // As a headers timeout: the request had reached the provider, which was
  // most likely generating (and billing) it for those seconds; resending it
  // pays again, and the same cut ends it the same way.
  it('after the request was sent and a long wait: not resent to the same model (status 0, network, not retryable)', async () => {
    const { adapter, requests, deadline } = await closingAfter(2500)
    const error = await callModel({
      models: [adapter],
      request,
      retry,
      limits: { admission: false },
      deadline,
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    const cause = (error as { lastCause: unknown }).lastCause
    expect(isProviderError(cause)).toBe(true)
    expect(cause).toMatchObject({ kind: 'network', status: 0, retryable: false })
    expect(String((cause as Error).message)).toMatch(/not resent to this model/)
    expect(requests).toHaveLength(1)
  })

  it('after a long wait the next model is still asked', async () => {
    const { adapter, requests, deadline } = await closingAfter(2500)
    const backup = await fakes.start({ dialect: 'openai' })
    const answer = await callModel({
      models: [adapter, fakes.adapterFor('openai', backup.baseURL, 'gpt-4o-mini')],
      request,
      retry,
      limits: { admission: false },
      deadline,
    })
    expect(answer.text.length).toBeGreaterThan(0)
    expect(requests).toHaveLength(1)
    expect(backup.requests).toHaveLength(1)
  })

  // A close as the request arrives (a keep-alive connection the server had
  // just closed): nothing was generated, so the same model is asked again.
  it('at once after the request: retried on the same model', async () => {
    const { adapter, requests, deadline } = await closingAfter(0)
    const error = await callModel({
      models: [adapter],
      request,
      retry,
      limits: { admission: false },
      deadline,
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

describe('an error status whose body breaks off long after sending', () => {
  // The headers came: the provider answered 503, nothing was generated.
  // The wait is measured to the headers, not to the body's cut: that 503
  // was taken for a cut generation and not retried.
  it('is retried as any 503, however late its body is cut', async () => {
    const clock = jumpingClock()
    const requests: number[] = []
    const server = await rawServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume()
      req.on('end', () => {
        requests.push(requests.length)
        res.writeHead(503, { 'content-type': 'application/json', 'content-length': '100' })
        res.write('{"error":{"message":"overlo')
        // Its body cut 1.5 s after the request was sent, on the call's clock.
        setImmediate(() => {
          clock.jump(1_500)
          req.socket.destroy()
        })
      })
    })
    servers.push(server)
    const adapter = fakes.adapter(
      openAICompatible({ baseURL: server.baseURL, apiKey: 'sk-test-0000', model: 'gpt-4o' }),
    )
    const error = await callModel({
      models: [adapter],
      request,
      retry,
      limits: { admission: false },
      deadline: Deadline.after(60_000, { clock }),
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect(String((error as { lastCause: Error }).lastCause.message)).not.toMatch(
      /before any response headers/,
    )
    expect(requests).toHaveLength(3)
  })
})
