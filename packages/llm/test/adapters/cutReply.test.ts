import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import {
  isModelUnavailable,
  type ModelUnavailableError,
} from '../../src/errors/ModelUnavailableError.js'
import type { ProviderError } from '../../src/errors/ProviderError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('Write at length.')], maxTokens: 256 }
const retry = { maxAttempts: 3, delay: FAST_RETRIES }

const adapterFor = fakes.adapterFor.bind(fakes)

describe('a non-streamed answer whose 200 body breaks off while it is read', () => {
  it.each(['openai', 'anthropic'] as const)(
    '%s: is not sent to the same model again (the provider generated, and billed, it): the call falls back',
    async (dialect) => {
      const primary = await fakes.start({ dialect })
      primary.enqueue(
        reply.text('a long and expensive answer', { cutAfterTokens: 2 }),
        reply.text('the same answer, paid twice'),
      )
      const backup = await fakes.start({ dialect: 'openai', reply: reply.text('from the backup') })
      const records: AttemptRecord[] = []
      const answer = await callModel({
        models: [
          adapterFor(dialect, primary.baseURL, 'big'),
          adapterFor('openai', backup.baseURL, 'small'),
        ],
        request,
        retry,
        onAttempt: (r) => records.push(r),
      })
      expect(answer.text).toBe('from the backup')
      expect(primary.requests).toHaveLength(1)
      expect(primary.paidGenerations).toBe(1)
      expect(records[0]).toMatchObject({
        model: 'big',
        status: 200,
        errorKind: 'network',
        decision: 'fallback',
      })
    },
  )

  it('without a fallback, fails after that one request', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('cut', { cutAfterTokens: 0 }), reply.text('again'))
    const error = await callModel({
      models: [adapterFor('openai', fake.baseURL, 'gpt-4o')],
      request,
      retry,
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    const cause = (error as ModelUnavailableError).lastCause as ProviderError
    expect(cause).toMatchObject({ kind: 'network', retryable: false, status: 200 })
    expect(cause.normalized.message).toMatch(/^the 200 reply broke off while its body was read/)
    expect(fake.requests).toHaveLength(1)
  })

  it('a stream request answered with a JSON 200 that breaks off is not sent again either', async () => {
    const hits: string[] = []
    const server = createServer((req, res) => {
      hits.push(req.url ?? '')
      req.resume()
      const body = JSON.stringify({
        id: 'c1',
        object: 'chat.completion',
        model: 'gpt-4o',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'whole' }, finish_reason: 'stop' },
        ],
      })
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      })
      res.write(body.slice(0, 40))
      setImmediate(() => res.destroy())
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    try {
      const error = await callModel({
        models: [adapterFor('openai', `http://127.0.0.1:${port}/v1`, 'gpt-4o')],
        request: { ...request, stream: true },
        retry,
      }).result.catch((e: unknown) => e)
      expect(isModelUnavailable(error)).toBe(true)
      expect((error as ModelUnavailableError).lastCause).toMatchObject({ retryable: false })
      expect(hits).toHaveLength(1)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  it('an error reply whose body breaks off is still retried (nothing was generated)', async () => {
    let hits = 0
    const server = createServer((req, res) => {
      hits++
      req.resume()
      if (hits > 1) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            id: 'c2',
            object: 'chat.completion',
            model: 'gpt-4o',
            choices: [
              { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
            ],
          }),
        )
        return
      }
      res.writeHead(500, { 'content-type': 'application/json', 'content-length': 200 })
      res.write('{"error":{"message":"inter')
      setImmediate(() => res.destroy())
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    try {
      const answer = await callModel({
        models: [adapterFor('openai', `http://127.0.0.1:${port}/v1`, 'gpt-4o')],
        request,
        retry,
        limits: { admission: false },
      })
      expect(answer.text).toBe('ok')
      expect(hits).toBe(2)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})
