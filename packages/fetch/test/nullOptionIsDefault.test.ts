import { Deadline, ManualClock } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import {
  createConnector,
  createFetch,
  deadlineInterceptor,
  type HourglassFetch,
  type LookupFunction,
  probe,
  suggestTimeouts,
} from '../src/index.js'
import { resolveOptions } from '../src/options.js'
import { probeResult } from './support/probeResult.js'

// `null` for a numeric option is its default, as every ingress reads it
// (express's `deadline()`, the gRPC interceptors): a config value that may
// be null (`Number(env.X) || null`, a JSON file) gave a TypeError here alone.
// What is nonsense — a string, NaN, a negative — is still refused, with the
// same message (optionMessages.test.ts, options.test.ts). No test here
// measures time: the one clock that moves is a ManualClock.

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  closers.push(server)
  return server
}
function client(options: Parameters<typeof createFetch>[0]): HourglassFetch {
  const fetch = createFetch(options)
  closers.push(fetch)
  return fetch
}

const NUMERIC = [
  'dnsTimeoutMs',
  'connectTimeoutMs',
  'headersTimeoutMs',
  'bodyTimeoutMs',
  'minBudgetMs',
] as const

it('null for a numeric option is its default, from every factory', () => {
  const defaults = resolveOptions({}, 'createFetch()')
  for (const name of NUMERIC) {
    const options = { [name]: null } as never
    // Before: "<name> must be a finite number ≥ 0 (ms), got null", a TypeError.
    expect(() => client(options), name).not.toThrow()
    expect(() => createConnector(options), name).not.toThrow()
    expect(() => deadlineInterceptor(options), name).not.toThrow()
    expect(resolveOptions(options, 'createFetch()')[name], name).toBe(defaults[name])
  }
  expect(
    resolveOptions({ retry: { maxRetryAfterMs: null } } as never, 'createFetch()').retry,
  ).toEqual(defaults.retry)
})

it('minBudgetMs: null refuses what the default 5 ms refuses', () => {
  const clock = new ManualClock()
  const fetch = client({ minBudgetMs: null } as never)
  using short = Deadline.after(3, { clock })
  using enough = Deadline.after(50, { clock })
  expect(fetch.wouldRefuse({ deadline: short })).toBe(true)
  expect(fetch.wouldRefuse({ deadline: enough })).toBe(false)
})

it("a per-call retry.maxRetryAfterMs of null keeps the factory's, as undefined does", async () => {
  // Retry-After: 1 s is longer than the factory's 0: the 503 is returned, not waited out.
  const server = await serve({ type: 'respond', status: 503, headers: { 'retry-after': '1' } })
  const fetch = client({ retry: { statuses: [503], maxRetryAfterMs: 0 } })
  // Before: rejected with "retry.maxRetryAfterMs must be a finite number ≥ 0 (ms), got null".
  const res = await fetch(server.url, { retry: { maxRetryAfterMs: null } } as never)
  expect(res.status).toBe(503)
  await res.body?.cancel()
  expect(server.records).toHaveLength(1)
})

it("probe: null warmup and samples are probe's defaults (3 and 10)", async () => {
  const server = await serve({ type: 'respond', body: 'ok' })
  // Before: "samples must be an integer ≥ 1, got null".
  const result = await probe(server.url, { warmup: null, samples: null } as never)
  expect(result.samples).toHaveLength(10)
  expect(server.records).toHaveLength(13)
})

it('probe: under callTimeoutMs a null phase limit is none, as one not given is', async () => {
  const clock = new ManualClock()
  let answer: (() => void) | undefined
  // A lookup that answers once the test says so: slower than fetch's 1 s DNS default.
  const lookup: LookupFunction = (_name, _options, callback) => {
    answer = () => callback(null, [{ address: '127.0.0.1', family: 4 }])
  }
  const server = await serve({ type: 'respond', body: 'ok' })
  const probed = probe(`http://svc.test:${server.port}/`, {
    warmup: 0,
    samples: 1,
    callTimeoutMs: 5000,
    dnsTimeoutMs: null,
    lookup,
    clock,
  } as never)
  await expect.poll(() => answer).toBeDefined()
  // With the fetch default (1000 ms) in place of none, the lookup failed here.
  clock.advance(1500)
  answer?.()
  const result = await probed
  expect(result.samples).toHaveLength(1)
  expect(result.samples[0]?.status).toBe(200)
})

it('callTimeoutMs: null is none (no bound), as undefined is', async () => {
  const server = await serve({ type: 'respond', body: 'ok' })
  const result = await probe(server.url, { warmup: 0, samples: 1, callTimeoutMs: null } as never)
  expect(result.samples).toHaveLength(1)
})

it('suggestTimeouts: null headroom, maxHeadroom and floorMs are its defaults (budgetMs, no option, is still required)', () => {
  const result = probeResult
  // Before: "headroom must be a finite number ≥ 0, got null".
  expect(
    suggestTimeouts(result, 5000, { headroom: null, maxHeadroom: null, floorMs: null } as never),
  ).toEqual(suggestTimeouts(result, 5000))
  expect(() => suggestTimeouts(result, null as never)).toThrow('budgetMs must be')
})
