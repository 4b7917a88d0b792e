import diagnostics_channel from 'node:diagnostics_channel'
import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('Write a poem.')], maxTokens: 256, stream: true as const }

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

/** A provider that answers 200 and then sends only `: keep-alive` comments. */
async function keepAliveOnly() {
  const fake = await fakes.start({
    dialect: 'openai',
    reply: reply.hang({ afterHeaders: true, keepAliveEveryMs: 20 }),
  })
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o', name: 'slow' }),
  )
  return { fake, model }
}

describe('a first-token timeout', () => {
  it('is not resent to the same model: one request, however many attempts are allowed', async () => {
    const { fake, model } = await keepAliveOnly()
    const records: AttemptRecord[] = []
    // The timer runs on the deadline's manual clock, moved once the 200 has
    // come: on the wall clock a loaded machine could take the 300 ms before
    // the headers, and the timeout would have no HTTP status.
    const clock = new ManualClock()
    using deadline = Deadline.after(600_000, { clock })
    const headers = headersRead()
    const stream = callModel({
      models: [model],
      request,
      deadline,
      firstTokenTimeoutMs: 300,
      onAttempt: (r) => records.push(r),
      retry: { maxAttempts: 3, delay: FAST_RETRIES },
    })
    await headers
    clock.advance(300)
    const error = await stream.result.catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect(fake.requests).toHaveLength(1)
    expect(records.map((r) => [r.errorKind, r.status, r.decision])).toEqual([
      ['timeout', 200, 'fail'],
    ])
    expect(records[0]?.reason).toMatch(/timeout \(HTTP 200\) is not retryable/)
    expect(String((error as { lastCause: Error }).lastCause.message)).toMatch(
      /no token within firstTokenTimeoutMs \(300 ms\)/,
    )
  })

  it('that ends before the response headers says so, with no HTTP status, and is not resent either', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.hang() })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o', name: 'mute' }),
    )
    const records: AttemptRecord[] = []
    const error = await callModel({
      models: [model],
      request,
      firstTokenTimeoutMs: 300,
      onAttempt: (r) => records.push(r),
      retry: { maxAttempts: 3, delay: FAST_RETRIES },
    }).result.catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect(fake.requests).toHaveLength(1)
    expect(records.map((r) => [r.errorKind, r.status, r.decision])).toEqual([
      ['timeout', 0, 'fail'],
    ])
    const message = String((error as { lastCause: Error }).lastCause.message)
    expect(message).toMatch(
      /no response headers, and so no token, within firstTokenTimeoutMs \(300 ms\)/,
    )
  })

  it('may go to a fallback model', async () => {
    const { fake, model } = await keepAliveOnly()
    const backupFake = await fakes.start({ dialect: 'openai', reply: reply.text('backup poem') })
    const backup = fakes.adapter(
      openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    // On the deadline's manual clock: the backup's own first token is not
    // raced against 300 ms of a loaded machine's wall clock.
    const clock = new ManualClock()
    using deadline = Deadline.after(600_000, { clock })
    const headers = headersRead()
    const result = callModel({
      models: [model, backup],
      request,
      deadline,
      firstTokenTimeoutMs: 300,
      retry: { maxAttempts: 3, delay: FAST_RETRIES },
    }).result
    await headers
    clock.advance(300)
    const answer = await result
    expect(answer.text).toBe('backup poem')
    expect(fake.requests).toHaveLength(1)
    expect(backupFake.requests).toHaveLength(1)
  })

  it('with resendAfterFirstTokenTimeout (a provider known to be idempotent), is resent once', async () => {
    const { fake, model } = await keepAliveOnly()
    const records: AttemptRecord[] = []
    const error = await callModel({
      models: [model],
      request,
      firstTokenTimeoutMs: 300,
      onAttempt: (r) => records.push(r),
      retry: { maxAttempts: 3, resendAfterFirstTokenTimeout: true, delay: FAST_RETRIES },
    }).result.catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    expect(fake.requests).toHaveLength(2)
    expect(records.map((r) => r.decision)).toEqual(['retry', 'fail'])
    expect(records[1]?.choice).toBe('retry 2 of 3 on this model (resendAfterFirstTokenTimeout)')
    // Both attempts carried the same Idempotency-Key: the resend is the same operation.
    expect(new Set(fake.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1)
  })

  it('due when the deadline is: the deadline ends the call, the one record says so without blaming the cooldown store, no fallback is sent, nothing stays held', async () => {
    const clock = new ManualClock()
    const { fake, model } = await keepAliveOnly()
    const backup = await fakes.start({ dialect: 'openai', reply: reply.text('too late') })
    const fallback = fakes.adapter(
      openAICompatible({ baseURL: backup.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    const budget = new CostBudget({
      limitUsd: 10,
      prices: {
        'gpt-4o': { inputPerMTok: 1, outputPerMTok: 1 },
        'gpt-4o-mini': { inputPerMTok: 1, outputPerMTok: 1 },
      },
    })
    const records: AttemptRecord[] = []
    const headers = headersRead()
    const stream = callModel({
      models: [model, fallback],
      request,
      deadline: Deadline.after(500, { clock }),
      firstTokenTimeoutMs: 500,
      limits: { admission: new Admission({ clock }), budget },
      retry: { budgets: false },
      onAttempt: (record) => records.push(record),
    })
    const ended = stream.result.catch((error: unknown) => error)
    // The 200 has come: the request is in the provider's hands. Waited for,
    // not assumed after 30 ms of real time (a loaded machine can take longer).
    while (fake.requests.length === 0) await new Promise((resolve) => setImmediate(resolve))
    await headers
    clock.advance(500)
    expect(isDeadlineExceeded(await ended)).toBe(true)
    expect(backup.requests).toHaveLength(0)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ decision: 'fail', errorKind: 'timeout', why: 'no-budget' })
    expect(records[0]?.reason).toBe('timeout (HTTP 200); the call was ended (deadline_exceeded)')
    expect(budget.reservedUsd).toBe(0)
  })
})
