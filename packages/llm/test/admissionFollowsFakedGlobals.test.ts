import { Deadline } from '@hourglass/core'
import {
  Admission,
  anthropic,
  callModel,
  defaultAdmission,
  isRateLimited,
  llmChannels,
  openAICompatible,
  setDefaultAdmission,
} from '@hourglass/llm'
import { anthropicErrors, openAIErrors, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, expect, it, vi } from 'vitest'

// An app's own test suite fakes time and randomness *after* its Admission
// exists: the process-wide default admission is made by the first callModel
// of the test file (or an app module makes `new Admission()` at import).
// core's systemClock reads the global performance and setTimeout at each
// call so that fakes installed later drive it; Admission took `Date.now` and
// `Math.random` once, when it was made, and so went on with the real ones
// (or with a fake clock already uninstalled).

const request = { messages: [{ role: 'user' as const, content: 'hello' }], maxTokens: 16 }
const open: Array<{ close(): Promise<void> }> = []

afterEach(async () => {
  vi.useRealTimers()
  vi.restoreAllMocks()
  setDefaultAdmission(undefined)
  await Promise.all(open.splice(0).map((item) => item.close()))
})

it("a refusal's retryAtMs and the cooldown event's untilMs are on the faked Date.now", async () => {
  const admission = new Admission() // made before the test fakes time
  const fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('hi') })
  open.push(fake)
  fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
  const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-4o' })
  open.push(model)
  const untils: number[] = []
  const onCooldown = (message: { state: string; untilMs: number }) => {
    if (message.state === 'start') untils.push(message.untilMs)
  }
  llmChannels.cooldown.subscribe(onCooldown)
  try {
    vi.useFakeTimers({ now: new Date('2030-01-01T00:00:00Z') })
    const deadline = Deadline.after(5000)
    // The 429's 30 s do not fit in 5 s: the call fails, the provider cools.
    await expect(
      callModel({ models: [model], request, deadline, limits: { admission } }),
    ).rejects.toThrow()
    // The next call is refused by admission, naming when to come back.
    const refusal = await callModel({
      models: [model],
      request,
      deadline,
      limits: { admission },
    }).catch((error: unknown) => error)
    deadline.dispose()
    expect(isRateLimited(refusal)).toBe(true)
    const { retryAtMs, retryAfterMs } = refusal as { retryAtMs: number; retryAfterMs: number }
    expect(retryAfterMs).toBeGreaterThan(25_000)
    // What a caller computes from it: how long to wait.
    expect(retryAtMs - Date.now()).toBeCloseTo(retryAfterMs, -2)
    expect(untils).toHaveLength(1)
    expect((untils[0] as number) - Date.now()).toBeGreaterThan(25_000)
    expect((untils[0] as number) - Date.now()).toBeLessThan(40_000)
  } finally {
    llmChannels.cooldown.unsubscribe(onCooldown)
  }
})

it('an overload retried after 5000 ms once the test pins Math.random to 0, with the default admission made earlier', async () => {
  // As any earlier callModel of the file makes it.
  defaultAdmission()
  const fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('hi') })
  open.push(fake)
  fake.enqueue(anthropicErrors.overloaded())
  const model = anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude-haiku-4-5' })
  open.push(model)
  // "an overload without a hint waits 5000 + random·5000 ms": pinned to 5000.
  vi.spyOn(Math, 'random').mockReturnValue(0)
  vi.useFakeTimers()
  const deadline = Deadline.after(20_000)
  let answer: string | undefined
  let failure: unknown
  callModel({ models: [model], request, deadline }).then(
    (response) => {
      answer = response.text
    },
    (error: unknown) => {
      failure = error
    },
  )
  await vi.waitFor(() => expect(fake.requests).toHaveLength(1), { interval: 1, timeout: 10_000 })
  await vi.advanceTimersByTimeAsync(5000)
  // The retry's answer comes over real loopback I/O: let it in.
  vi.useRealTimers()
  // Bounded at 10 s, not less: a worker kept from running on two loaded
  // cores; never sent (the bug), no answer comes and the test fails below.
  await vi
    .waitFor(() => expect(answer ?? failure).toBeDefined(), { interval: 1, timeout: 10_000 })
    .catch(() => {})
  deadline.dispose()
  expect(failure).toBeUndefined()
  expect(fake.requests).toHaveLength(2)
  expect(answer).toBe('hi')
})
