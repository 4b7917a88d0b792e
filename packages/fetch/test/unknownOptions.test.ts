import { describe, expect, it } from 'vitest'
import {
  type ConnectorOptions,
  createConnector,
  createFetch,
  deadlineInterceptor,
  probe,
} from '../src/index.js'

// A key no factory reads is a mistake, not an extension point: ignored,
// `createFetch({ dnsTimeout: 5 })` left the 1 s default in force while its
// author believed DNS was bounded at 5 ms — where express's deadline()
// refuses unknown keys. Every factory of the package now refuses them with a
// TypeError naming the key and, when one is close, the option meant. No
// call is made; nothing here measures time.

function refusal(make: () => unknown): Error {
  try {
    make()
  } catch (error) {
    return error as Error
  }
  throw new Error('expected the options to be refused')
}

describe('unknown option keys', () => {
  it('createFetch names the key and the option it is closest to', () => {
    const error = refusal(() => createFetch({ dnsTimeout: 5 } as never))
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toMatch(
      /^unknown option "dnsTimeout" \(did you mean dnsTimeoutMs\?\); createFetch\(\) takes dnsTimeoutMs, /,
    )
  })

  it('names every unknown key, and suggests nothing when no option is close', () => {
    const error = refusal(() => createFetch({ headerTimeoutMs: 5, colour: 'red' } as never))
    expect(error.message).toMatch(
      /^unknown options "headerTimeoutMs" \(did you mean headersTimeoutMs\?\), "colour"; /,
    )
  })

  it('deadlineInterceptor and createConnector refuse them too, and take what createConnector and the README share between them (tls)', () => {
    for (const factory of [deadlineInterceptor, createConnector]) {
      const error = refusal(() => factory({ minBudget: 5 } as never))
      expect(error).toBeInstanceOf(TypeError)
      expect(error.message).toContain('"minBudget" (did you mean minBudgetMs?)')
      const shared: ConnectorOptions = { tls: { rejectUnauthorized: false }, minBudgetMs: 5 }
      expect(() => factory(shared)).not.toThrow()
    }
  })

  it('a retry rule that is misspelt is refused too, by the factory and per call', async () => {
    const error = refusal(() => createFetch({ retry: { status: [503] } as never }))
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toBe(
      'unknown retry rule "status" (did you mean statuses?); retry takes fastConnectFailure, emptyRead, statuses, maxRetryAfterMs',
    )
    const fetch = createFetch()
    try {
      // fetch() never throws: its promise rejects, before anything is sent.
      await expect(
        fetch('http://127.0.0.1:1/', { retry: { emptyReads: true } as never }),
      ).rejects.toThrow('unknown retry rule "emptyReads" (did you mean emptyRead?)')
    } finally {
      await fetch.close()
    }
  })

  it('options that are not an object are refused, not read as "no options"', () => {
    expect(refusal(() => createFetch(500 as never)).message).toBe(
      'createFetch(): options must be an object, got 500',
    )
  })

  it('probe rejects a misspelt option of its own or of the fetch it makes, before any call', async () => {
    await expect(probe('http://127.0.0.1:9/', { sample: 3 } as never)).rejects.toThrow(
      /unknown option "sample" \(did you mean samples\?\); probe\(\) takes /,
    )
    await expect(probe('http://127.0.0.1:9/', { connectTimeout: 3 } as never)).rejects.toThrow(
      '"connectTimeout" (did you mean connectTimeoutMs?)',
    )
  })

  it('every documented option is still taken', async () => {
    const all = {
      dnsTimeoutMs: 1,
      connectTimeoutMs: 1,
      headersTimeoutMs: 1,
      bodyTimeoutMs: 1,
      minBudgetMs: 1,
      retry: false as const,
      lookup: () => {},
      clock: { now: () => 0, setTimeout: () => 0, clearTimeout: () => {} },
      tls: {},
    }
    await createFetch(all).close()
    expect(() => deadlineInterceptor(all as ConnectorOptions)).not.toThrow()
    expect(() => createConnector(all)).not.toThrow()
  })
})
