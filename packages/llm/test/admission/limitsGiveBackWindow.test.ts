import { afterEach, describe, expect, it, vi } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits, type RedisLimitClient } from '../../src/admission/ProviderLimits.js'

const quiet = { warn: () => {}, info: () => {} }

/** Lets a give-back (not awaited by `release`) land. */
const settle = () => new Promise((resolve) => setImmediate(resolve))

/** Requests admitted, and their tokens, of `weights` tried in turn on `provider`. */
async function admittedOf(limits: ProviderLimits, provider: string, weights: readonly number[]) {
  let requests = 0
  let tokens = 0
  for (const weight of weights) {
    const decision = await limits.tryAcquire(provider, weight)
    if (!decision.admitted) continue
    requests++
    tokens += weight
  }
  return { requests, tokens }
}

// The in-memory windows are rate-limiter-flexible's, on `Date.now`: only
// Date is faked, so a window ends at once instead of a minute later.
afterEach(() => {
  vi.useRealTimers()
})

describe('a give-back goes to the window that counted the request, never to the next', () => {
  it('in memory: a request released as not sent once its window has ended lends nothing to the new one', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const limits = new ProviderLimits({ limits: { acme: { rpm: 2, tpm: 1000 } }, logger: quiet })
    const admission = new Admission({ limits, logger: quiet })
    // Admitted as its window ends; not sent after all (a cost budget
    // refused it) once the next window had begun.
    const late = await admission.acquire({ provider: 'acme', tokens: 900 })
    vi.setSystemTime(Date.now() + 61_000)
    late.release({ sent: false })
    await settle()
    // Given to the new window, it started at -1 request and -900 tokens:
    // 3 requests and 1850 tokens went out in a window of 2 and 1000.
    expect(await admittedOf(limits, 'acme', [900, 900, 50])).toEqual({ requests: 2, tokens: 950 })
    expect(await admittedOf(limits, 'acme', [50])).toEqual({ requests: 0, tokens: 0 })
  })

  it('in memory: a give-back in the window that counted it still frees its share', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1, tpm: 1000 } }, logger: quiet })
    const admission = new Admission({ limits, logger: quiet })
    const unsent = await admission.acquire({ provider: 'acme', tokens: 900 })
    vi.setSystemTime(Date.now() + 30_000)
    unsent.release({ sent: false })
    await settle()
    expect(await admittedOf(limits, 'acme', [900, 900])).toEqual({ requests: 1, tokens: 900 })
  })

  it("Redis gone: a request Redis counted gives nothing to this process's local share", async () => {
    // A client Redis answers (a window of 1 request, 60 s left) until it
    // goes down: then the limits count on the local share (2 / 2 instances).
    const client: RedisLimitClient & { status: string } = {
      status: 'ready',
      evalsha: async () => [1, 60_000],
      eval: async () => [1, 60_000],
    }
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 2 } },
      redis: client,
      instances: 2,
      logger: quiet,
    })
    const admission = new Admission({ limits, logger: quiet })
    const counted = await admission.acquire({ provider: 'acme' })
    client.status = 'end'
    counted.release({ sent: false })
    await settle()
    // The local window never counted it: given back there, it started at -1
    // and let 2 requests through a share of 1.
    expect(await admittedOf(limits, 'acme', [0, 0])).toEqual({ requests: 1, tokens: 0 })
  })
})
