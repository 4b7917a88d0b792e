import type { FakeProvider } from '@hourglass/testkit'
import OpenAI, { APIError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { refuseSpentBudget } from '../../src/http/refuseSpentBudget.js'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * A caller whose budget is already spent on arrival (below the ingress
 * reserve: `x-deadline-remaining-ms: 1`, `grpc-timeout: 1m`) gets the
 * gateway's own 504 — OpenAI's error shape, `x-should-retry: false`, one log
 * line — not the ingress middleware's plain body, which the official SDK
 * cannot read and retries.
 */
describe('a budget spent before the request arrives', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  for (const [header, value] of [
    ['x-deadline-remaining-ms', '1'],
    ['grpc-timeout', '1m'],
    ['x-deadline-remaining-ms', '0'],
  ] as const) {
    it(`${header}: ${value} is the gateway's 504, which the official client does not retry`, async () => {
      const provider = await fakeProvider('openai', ['k'])
      fake = provider.fake
      // The ingress reserve is 10 ms at least: both budgets are below it on any machine.
      harness = await startHarness({
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'gpt']) },
      })
      const seen: Response[] = []
      const client = new OpenAI({
        baseURL: `${harness.url}/v1`,
        apiKey: 'x',
        maxRetries: 2, // the SDK's default
        fetch: async (url, init) => {
          const res = await fetch(url, init)
          seen.push(res.clone())
          return res
        },
      })
      const error = await client.chat.completions
        .create(
          { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
          { headers: { [header]: value, 'x-request-id': 'spent-1' } },
        )
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(APIError)
      expect((error as APIError).status).toBe(504)
      expect((error as APIError).code).toBe('deadline_exceeded')
      expect(seen).toHaveLength(1)
      expect(seen[0]?.headers.get('x-should-retry')).toBe('false')
      expect(seen[0]?.headers.get('x-deadline-expired')).toBe('1')
      expect(seen[0]?.headers.get('x-request-id')).toBe('spent-1')
      const lines = harness.logs.filter((l) => l.event === 'request')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatchObject({
        requestId: 'spent-1',
        status: 504,
        error: 'deadline_exceeded',
      })
      expect(fake.requests).toHaveLength(0)
    })
  }
})

/**
 * The check runs on every request, before `deadline()` reads the same
 * headers: for the many that carry none, it must cost lookups, not a second
 * full reading (core's `readDeadline`, unless told the names are lower case,
 * walks every header for each name it misses, to match any letter case).
 */
describe('refuseSpentBudget on every request', () => {
  const check = refuseSpentBudget({ maxMs: 60_000, reserveMs: 10 })
  /** What the middleware passed on (undefined: the request goes on), and how often it walked the header names. */
  function run(record: Record<string, string>) {
    let walks = 0
    const headers = new Proxy(record, {
      ownKeys(target) {
        walks++
        return Reflect.ownKeys(target)
      },
    })
    let passed: unknown = 'next not called'
    check({ headers } as never, {} as never, (error?: unknown) => {
      passed = error
    })
    return { passed, walks }
  }

  it('no deadline header (what the official SDKs send): passed on without a walk over the headers', () => {
    expect(
      run({
        host: 'gateway',
        'content-type': 'application/json',
        'x-stainless-timeout': '600',
        'x-stainless-retry-count': '0',
      }),
    ).toEqual({ passed: undefined, walks: 0 })
  })

  it('each trusted header still decides: spent is refused, a budget left passes', () => {
    for (const [header, spent, left] of [
      ['x-deadline-remaining-ms', '1', '5000'],
      ['grpc-timeout', '1m', '5S'],
      ['x-envoy-expected-rq-timeout-ms', '1', '5000'],
    ] as const) {
      expect((run({ [header]: spent }).passed as { code?: unknown }).code, header).toBe(
        'DEADLINE_EXCEEDED',
      )
      expect(run({ [header]: left }).passed, header).toBeUndefined()
    }
  })
})
