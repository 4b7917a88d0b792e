import diagnostics from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { qwenErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmAdmissionMessage, llmChannels } from '../../src/channels.js'
import { isRequestRejected } from '../../src/errors/RequestRejectedError.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('你好')], maxTokens: 16 }

let listener: ((message: unknown) => void) | undefined
afterEach(() => {
  if (listener) diagnostics.unsubscribe(llmChannels.admission.name, listener)
  listener = undefined
})

/** Resolves when admission starts waiting for a cooldown (its timer is set by then). */
function nextAdmissionWait(): Promise<LlmAdmissionMessage> {
  return new Promise((resolve) => {
    listener = (message) => {
      if ((message as LlmAdmissionMessage).action === 'wait')
        resolve(message as LlmAdmissionMessage)
    }
    diagnostics.subscribe(llmChannels.admission.name, listener)
  })
}

/** Admission and deadlines on one manual clock: nothing here waits for real time. */
function manual() {
  const clock = new ManualClock(1_000)
  const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
  return { clock, admission }
}

async function qwenModel(apiKeys: string[] = ['sk-qwen']) {
  const fake = await fakes.start({ dialect: 'qwen' })
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKeys, model: 'qwen-plus', dialect: 'qwen' }),
  )
  return { fake, model }
}

describe('Qwen compatible mode: the per-minute token throttle (429 insufficient_quota) is a rate limit, not a spent account', () => {
  it('is waited out (its retry-after honoured) and answered; the key is not retired', async () => {
    const { clock, admission } = manual()
    const { fake, model } = await qwenModel()
    fake.enqueue(
      { ...qwenErrors.compatibleTokenLimited(), headers: { 'retry-after': '7' } },
      reply.text('限流过后的回答'),
    )
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(30_000, { clock })
    const waiting = nextAdmissionWait()
    const call = callModel({
      models: [model],
      request,
      deadline,
      limits: { admission },
      onAttempt: (r) => records.push(r),
    })
    // Before: the first answer ended the call (quota_exhausted, not retryable).
    const first = await Promise.race([
      waiting,
      call.then(
        () => 'settled' as const,
        () => 'settled' as const,
      ),
    ])
    expect(records[0]).toMatchObject({
      decision: 'retry',
      errorKind: 'rate_limited',
      status: 429,
    })
    expect(first).not.toBe('settled')
    const { waitMs } = first as LlmAdmissionMessage
    // The server's 7 s, plus up to 10 %.
    expect(waitMs).toBeGreaterThanOrEqual(7_000)
    expect(waitMs).toBeLessThanOrEqual(7_700)
    expect(fake.requests).toHaveLength(1) // nothing goes before the wait is over
    clock.advance(waitMs)
    const answer = await call
    expect(answer.text).toBe('限流过后的回答')
    expect(fake.requests).toHaveLength(2)

    // The key was not retired: the next call on the same admission uses it.
    const again = await callModel({ models: [model], request, deadline, limits: { admission } })
    expect(again.text).toBe('Hello from the fake provider.')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-qwen', 'sk-qwen', 'sk-qwen'])
  })

  it('a streaming request throttled so goes to the same key again after the cooldown (no other key is burnt)', async () => {
    const { clock, admission } = manual()
    const { fake, model } = await qwenModel(['sk-a', 'sk-b'])
    // Both keys are throttled once: a retired key would never be sent to again.
    fake.enqueue(
      { ...qwenErrors.compatibleTokenLimited(), headers: { 'retry-after': '2' } },
      { ...qwenErrors.compatibleTokenLimited(), headers: { 'retry-after': '2' } },
      reply.text('流式回答'),
    )
    using deadline = Deadline.after(30_000, { clock })
    const records: AttemptRecord[] = []
    const waiting = nextAdmissionWait()
    const stream = callModel({
      models: [model],
      request: { ...request, stream: true },
      deadline,
      limits: { admission },
      retry: { maxAttempts: 3 },
      onAttempt: (r) => records.push(r),
    })
    const first = await Promise.race([
      waiting,
      stream.result.then(
        () => 'settled' as const,
        () => 'settled' as const,
      ),
    ])
    expect(records.map((r) => [r.errorKind, r.decision])).toEqual([
      ['rate_limited', 'retry'],
      ['rate_limited', 'retry'],
    ])
    expect(first).not.toBe('settled')
    clock.advance((first as LlmAdmissionMessage).waitMs)
    const answer = await stream.result
    expect(answer.text).toBe('流式回答')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-a', 'sk-b', expect.any(String)])
  })
})

describe('Qwen: a streaming request refused by the input filter with an SSE-framed 400', () => {
  it('is a content-policy refusal with the provider code and message: not retried, not sent to a fallback', async () => {
    const { fake, model } = await qwenModel()
    const backupFake = await fakes.start({ dialect: 'openai' })
    const backup = fakes.adapter(
      openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'sk-b', model: 'gpt-4o-mini' }),
    )
    const body = qwenErrors.compatibleDataInspectionFailed().body
    // What DashScope sends for `stream: true`: the error object as an SSE data line.
    fake.setReply(
      reply.error(400, `data: ${JSON.stringify(body)}\n\n`, {
        'content-type': 'text/event-stream;charset=UTF-8',
      }),
    )
    const stream = callModel({
      models: [model, backup],
      request: { ...request, stream: true },
    })
    const error = await stream.result.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isRequestRejected(error)).toBe(true)
    expect(error).toMatchObject({
      kind: 'content_policy',
      status: 400,
      providerCode: 'data_inspection_failed',
      attempts: 1,
    })
    expect((error as Error).message).toMatch(/: Input data may contain inappropriate content\.$/)
    expect(fake.requests).toHaveLength(1)
    expect(backupFake.requests).toHaveLength(0)
  })
})
