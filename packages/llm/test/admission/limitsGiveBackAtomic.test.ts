import { afterEach, describe, expect, it, vi } from 'vitest'
import { COUNTED_WINDOW_END, MemoryLimiter } from '../../src/admission/MemoryLimiter.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'

const quiet = { warn: () => {}, info: () => {} }

// The in-memory windows are rate-limiter-flexible's, on `Date.now`: only
// Date is faked, and it is moved on while a give-back or a take-back is in
// flight — the clock ticking across its await, at a window's end.
afterEach(() => {
  vi.useRealTimers()
})

/** Tokens admitted of `weights` consumed in turn on `limiter`'s key `k`. */
async function tokensAdmitted(limiter: MemoryLimiter, weights: readonly number[]) {
  let tokens = 0
  for (const weight of weights) {
    await limiter.consume('k', weight).then(
      () => {
        tokens += weight
      },
      () => {},
    )
  }
  return tokens
}

describe('a give-back checks its window and gives back in one step', () => {
  it('in memory: a give-back made as its window ends lends nothing to the next window', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const start = Date.now()
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 2 } },
      windowMs: 1000,
      logger: quiet,
    })
    const decision = await limits.count('acme', 0)
    if (!decision.admitted || decision.giveBack === undefined) throw new Error('not admitted')
    // 1 ms left of the window that counted it: the give-back starts, and the
    // window ends before it is done. Read first and given back after, it
    // went to the next window, which then admitted 3 of an RPM limit of 2.
    vi.setSystemTime(start + 999)
    const givenBack = decision.giveBack()
    vi.setSystemTime(start + 1000)
    await givenBack
    let admitted = 0
    for (let i = 0; i < 4; i++) if ((await limits.tryAcquire('acme', 0)).admitted) admitted++
    expect(admitted).toBe(2)
  })

  it('MemoryLimiter: a give-back whose window ends meanwhile takes no window below zero', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const start = Date.now()
    const limiter = new MemoryLimiter({ points: 2, duration: 1 })
    const taken = await limiter.consume('k', 1)
    vi.setSystemTime(start + 999)
    const givenBack = limiter.reward('k', 1, {
      [COUNTED_WINDOW_END]: start + taken.msBeforeNext,
    })
    vi.setSystemTime(start + 1000)
    expect((await givenBack).consumedPoints).toBeGreaterThanOrEqual(0)
    expect((await limiter.consume('k', 1)).consumedPoints).toBe(1)
  })

  it("MemoryLimiter: a refused consume's take-back, its window ending meanwhile, lends nothing to the next", async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const start = Date.now()
    const limiter = new MemoryLimiter({ points: 1000, duration: 1 }) // a TPM limit of 1000
    await limiter.consume('k', 900)
    vi.setSystemTime(start + 999)
    // Over the limit: refused, its count taken back — after the window ended.
    const refused = limiter.consume('k', 900).then(
      () => 'admitted',
      () => 'refused',
    )
    vi.setSystemTime(start + 1000)
    expect(await refused).toBe('refused')
    // Taken back from the next window, it started at -900: 1800 admitted.
    expect(await tokensAdmitted(limiter, [900, 900, 900])).toBe(900)
  })

  // What the two above rely on is rate-limiter-flexible's memory storage
  // (its stored windows, read and lowered in place). A version keeping them
  // elsewhere, or differently, fails here: every give-back would be undone.
  it("MemoryLimiter: a give-back in its window lowers the library's count; a refusal counts nothing", async () => {
    // Date held still: the end given back below is `Date.now()` then plus
    // the ms left at the count; on the running clock a pause of over 50 ms
    // (the slack) in between, a GC or a loaded CPU, made it another window's.
    vi.useFakeTimers({ toFake: ['Date'] })
    const limiter = new MemoryLimiter({ points: 3, duration: 60 })
    const first = await limiter.consume('k', 2)
    expect(first.consumedPoints).toBe(2)
    await expect(limiter.consume('k', 2)).rejects.toMatchObject({ consumedPoints: 4 })
    expect((await limiter.get('k'))?.consumedPoints).toBe(2)
    const givenBack = await limiter.reward('k', 1, {
      [COUNTED_WINDOW_END]: Date.now() + first.msBeforeNext,
    })
    expect(givenBack.consumedPoints).toBe(1)
    expect(givenBack.remainingPoints).toBe(2)
    expect((await limiter.get('k'))?.consumedPoints).toBe(1)
    // Never below zero.
    await limiter.reward('k', 5)
    expect((await limiter.get('k'))?.consumedPoints).toBe(0)
    expect((await limiter.consume('k', 3)).remainingPoints).toBe(0)
    // A window of another end (another window) is given nothing.
    await limiter.reward('k', 1, { [COUNTED_WINDOW_END]: Date.now() + 120_000 })
    expect((await limiter.get('k'))?.consumedPoints).toBe(3)
  })
})
