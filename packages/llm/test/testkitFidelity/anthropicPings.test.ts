import diagnostics_channel from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
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

/** Resolves once the next response's headers have reached the code awaiting them. */
function headersRead(): Promise<void> {
  return new Promise((resolve) => {
    const onHeaders = () => {
      diagnostics_channel.unsubscribe('undici:request:headers', onHeaders)
      setImmediate(resolve)
    }
    diagnostics_channel.subscribe('undici:request:headers', onHeaders)
  })
}
const request = { messages: [user('Write a poem.')], maxTokens: 256, stream: true as const }

it('a stream of pings and no token ends at firstTokenTimeoutMs, as a timeout with the 200', async () => {
  const fake = await fakes.start({
    dialect: 'anthropic',
    reply: reply.hang({ afterHeaders: true, keepAliveEveryMs: 20 }),
  })
  const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-sonnet-4-5')
  const records: AttemptRecord[] = []
  // On the deadline's manual clock, moved once the 200 and some pings have
  // come: on the wall clock a loaded machine could take the 300 ms before the
  // headers, and the timeout would have no status.
  const clock = new ManualClock()
  using deadline = Deadline.after(600_000, { clock })
  const headers = headersRead()
  const result = callModel({
    models: [model],
    request,
    deadline,
    firstTokenTimeoutMs: 300,
    onAttempt: (r) => records.push(r),
    retry: { maxAttempts: 2, delay: FAST_RETRIES },
  }).result.catch((e: unknown) => e)
  await headers
  await new Promise((resolve) => setTimeout(resolve, 100)) // pings every 20 ms
  clock.advance(300)
  const error = await result
  expect(error).toBeInstanceOf(Error)
  expect(records.map((r) => [r.errorKind, r.status])).toEqual([['timeout', 200]])
  // The stalled stream had opened with `message_start`, as Anthropic's do:
  // its message id is the one support asks for.
  expect(records[0]).toMatchObject({ responseId: expect.stringMatching(/^msg_/) })
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
