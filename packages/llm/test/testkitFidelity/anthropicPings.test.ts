import { reply } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

/**
 * Anthropic keeps a quiet stream alive with `event: ping` events, not SSE
 * comments; the fake now sends those. A ping is bookkeeping: it is no token
 * for `firstTokenTimeoutMs`, and an answer after a run of them reads whole.
 */
const fakes = useFakes()
const request = { messages: [user('Write a poem.')], maxTokens: 256, stream: true as const }

it('a stream of pings and no token ends at firstTokenTimeoutMs, as a timeout with the 200', async () => {
  const fake = await fakes.start({
    dialect: 'anthropic',
    reply: reply.hang({ afterHeaders: true, keepAliveEveryMs: 20 }),
  })
  const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-sonnet-4-5')
  const records: AttemptRecord[] = []
  const error = await callModel({
    models: [model],
    request,
    firstTokenTimeoutMs: 300,
    onAttempt: (r) => records.push(r),
    retry: { maxAttempts: 2, delay: FAST_RETRIES },
  }).result.catch((e: unknown) => e)
  expect(error).toBeInstanceOf(Error)
  expect(records.map((r) => [r.errorKind, r.status])).toEqual([['timeout', 200]])
})

it('an answer after a run of pings (between content_block_start and the first delta) reads whole', async () => {
  const fake = await fakes.start({
    dialect: 'anthropic',
    reply: reply.text('Roses are red.', { firstTokenDelayMs: 100, keepAliveEveryMs: 20 }),
  })
  const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-sonnet-4-5')
  const response = await callModel({ models: [model], request, firstTokenTimeoutMs: 5000 }).result
  expect(response).toMatchObject({ text: 'Roses are red.', finishReason: 'stop' })
  expect(fake.requests[0]?.outcome).toBe('success')
})
