import { channel } from 'node:diagnostics_channel'
import { describe, expect, it } from 'vitest'
import { createGateway, parseGatewayConfig } from '../src/index.js'
import { configProblems as problems } from './support/configProblems.js'
import { fakeProvider, fallback, startHarness } from './support/harness.js'

/**
 * `deadline.defaultMs` and `deadline.maxMs`, one left out, follow the other,
 * as @hourglass/express's `deadline()` takes them. Each defaulted on its
 * own (60 s, 300 s), an operator capping budgets at 30 s with
 * `"deadline": { "maxMs": 30000 }` had the gateway refuse to start:
 * `deadline.defaultMs: must not exceed deadline.maxMs (30000)`, a field
 * never written; `"defaultMs": 400000` alone, likewise.
 */
const config = (deadline: Record<string, number>) => ({
  providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:1/v1', apiKeys: ['k'] } },
  models: { m: fallback(['p', 'gpt-4o']) },
  deadline,
})

describe('deadline.defaultMs and deadline.maxMs, one left out, follow the other', () => {
  it('maxMs alone caps the default budget too; defaultMs alone raises the cap to it', () => {
    expect(parseGatewayConfig(config({ maxMs: 30_000 })).deadline).toEqual({
      defaultMs: 30_000,
      maxMs: 30_000,
    })
    expect(parseGatewayConfig(config({ defaultMs: 400_000 })).deadline).toEqual({
      defaultMs: 400_000,
      maxMs: 400_000,
    })
    // Within the other's default, nothing moves.
    expect(parseGatewayConfig(config({ maxMs: 120_000 })).deadline).toEqual({
      defaultMs: 60_000,
      maxMs: 120_000,
    })
    expect(parseGatewayConfig(config({ defaultMs: 5_000 })).deadline).toEqual({
      defaultMs: 5_000,
      maxMs: 300_000,
    })
  })

  it('both written and at odds is still refused; a reserve is weighed against the default that follows', () => {
    expect(problems(config({ defaultMs: 40_000, maxMs: 30_000 }))).toEqual([
      'deadline.defaultMs: must not exceed deadline.maxMs (30000)',
    ])
    // Said of the field written: the default budget follows maxMs here.
    expect(problems(config({ maxMs: 1_000, reserveMs: 1_000 }))).toEqual([
      'deadline.reserveMs: must be less than deadline.maxMs, which the default budget follows without a defaultMs (1000)',
    ])
    expect(problems(config({ maxMs: 100_000, reserveMs: 70_000 }))).toEqual([
      'deadline.reserveMs: must be less than the default budget, deadline.defaultMs’s default (60000)',
    ])
    expect(problems(config({ defaultMs: 500, reserveMs: 500 }))).toEqual([
      'deadline.reserveMs: must be less than deadline.defaultMs (500)',
    ])
    // An invalid maxMs is its own problem alone, no line about a valid reserve.
    expect(problems(config({ maxMs: 0, reserveMs: 5 }))).toEqual([
      'deadline.maxMs: expected more than 0 ms',
    ])
  })

  it('a gateway with maxMs alone starts, and a request without a deadline header gets that budget', async () => {
    const p = await fakeProvider('openai', ['k'])
    const harness = await startHarness({
      providers: { p: p.entry },
      models: { m: fallback(['p', 'gpt-4o']) },
      deadline: { maxMs: 30_000 },
    })
    try {
      await harness.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
      })
      const sent = Number(p.fake.requests[0]?.headers['x-deadline-remaining-ms'])
      expect(sent).toBeGreaterThan(0)
      expect(sent).toBeLessThanOrEqual(30_000)
    } finally {
      await harness.close()
      await p.fake.close()
    }
  })

  it('createGateway names maxMs as the one to raise when the default budget follows it', () => {
    expect(() => createGateway(config({ maxMs: 20 }))).toThrow(
      /deadline\.defaultMs: must be more than 35 ms: .* \(got 20; left out, defaultMs is deadline\.maxMs\)$/,
    )
    expect(() => createGateway(config({ defaultMs: 20 }))).toThrow(
      /deadline\.defaultMs: must be more than 35 ms: .* \(got 20\)$/,
    )
  })

  it('a budget deadline() refuses (maxMs under its reserve) is refused before anything is opened: no listener left', () => {
    const attempts = channel('hourglass:llm:attempt')
    const before = attempts.hasSubscribers
    expect(() => createGateway(config({ maxMs: 5 }), { replyReserveMs: 0 })).toThrow(/maxMs/)
    expect(attempts.hasSubscribers).toBe(before)
  })
})
