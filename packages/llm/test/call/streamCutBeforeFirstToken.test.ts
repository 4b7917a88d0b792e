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
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('Write at length.')], maxTokens: 256, stream: true as const }
const retry = { maxAttempts: 3, delay: FAST_RETRIES }

const adapterFor = fakes.adapterFor.bind(fakes)

describe('a stream cut after its 200 but before the first token', () => {
  it.each(['openai', 'anthropic'] as const)(
    '%s: is not resent to the same model (the generation started, and may be billed): the call falls back',
    async (dialect) => {
      const primary = await fakes.start({ dialect })
      primary.enqueue(
        reply.text('a long and expensive answer', { cutAfterTokens: 0 }),
        reply.text('the same answer, paid twice'),
      )
      const backup = await fakes.start({ dialect: 'openai', reply: reply.text('from the backup') })
      const records: AttemptRecord[] = []
      const stream = callModel({
        models: [
          adapterFor(dialect, primary.baseURL, 'big'),
          adapterFor('openai', backup.baseURL, 'small'),
        ],
        request,
        retry,
        onAttempt: (r) => records.push(r),
      })
      const answer = await stream.result
      expect(answer.text).toBe('from the backup')
      expect(primary.requests).toHaveLength(1)
      expect(records[0]).toMatchObject({
        model: 'big',
        status: 200,
        errorKind: 'network',
        decision: 'fallback',
      })
      expect(records[0]?.reason).toMatch(/not retryable/)
    },
  )

  it('without a fallback, fails after that one request, saying why', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('cut', { cutAfterTokens: 0 }), reply.text('again'))
    const error = await callModel({
      models: [adapterFor('openai', fake.baseURL, 'gpt-4o')],
      request,
      retry,
    }).result.catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    const cause = (error as ModelUnavailableError).lastCause
    expect(cause).toMatchObject({ kind: 'network', retryable: false, status: 200 })
    expect((cause as { normalized: { message: string } }).normalized.message).toMatch(
      /^the 200 stream broke off while it was read .*not resent to this model/,
    )
    expect(fake.requests).toHaveLength(1)
  })

  it('a stream whose body ends cleanly before the end marker and any token is not resent either', async () => {
    let hits = 0
    const server = createServer((req, res) => {
      hits++
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      // The role chunk OpenAI sends first, then the body ends: no token, no [DONE].
      res.end(
        `data: ${JSON.stringify({
          id: 'c1',
          object: 'chat.completion.chunk',
          model: 'gpt-4o',
          choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
        })}\n\n`,
      )
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    try {
      const error = await callModel({
        models: [adapterFor('openai', `http://127.0.0.1:${port}/v1`, 'gpt-4o')],
        request,
        retry,
      }).result.catch((e: unknown) => e)
      expect(isModelUnavailable(error)).toBe(true)
      expect((error as ModelUnavailableError).lastCause).toMatchObject({
        kind: 'network',
        retryable: false,
        status: 200,
      })
      expect(hits).toBe(1)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  it('an error status before the stream opened is still retried (nothing was generated)', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.error(500, { error: { message: 'boom', type: 'server_error' } }))
    const stream = callModel({
      models: [adapterFor('openai', fake.baseURL, 'gpt-4o')],
      request,
      retry,
    })
    expect((await stream.result).text).toBe('Hello from the fake provider.')
    expect(fake.requests).toHaveLength(2)
  })
})
