import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createConnector,
  createFetch,
  deadlineInterceptor,
  type HourglassFetch,
} from '../src/index.js'
import { rejection } from './helpers.js'

// Options are checked when they are given, with an error that names them: a
// bad value must never quietly mean something else (a retry nobody asked
// for, a limit that is not one). No test here measures time.

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
function client(options: Parameters<typeof createFetch>[0] = {}): HourglassFetch {
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
const BAD_NUMBERS: unknown[] = [
  Number.NaN,
  -1,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  '100',
]

describe('numeric options', () => {
  for (const name of NUMERIC) {
    it(`${name}: NaN, negative or Infinity is a RangeError, a string a TypeError, naming it, from every factory (null is the default: nullOptionIsDefault.test.ts)`, () => {
      for (const value of BAD_NUMBERS) {
        const options = { [name]: value } as never
        expect(() => createFetch(options), String(value)).toThrow(
          typeof value === 'number' ? RangeError : TypeError,
        )
        expect(() => createFetch(options), String(value)).toThrow(name)
        expect(() => deadlineInterceptor(options), String(value)).toThrow(name)
        expect(() => createConnector(options), String(value)).toThrow(name)
      }
    })
  }

  it('0 and finite values are accepted (0 = no limit of its own)', () => {
    for (const name of NUMERIC) {
      expect(() => deadlineInterceptor({ [name]: 0 })).not.toThrow()
      expect(() => deadlineInterceptor({ [name]: 1234.5 })).not.toThrow()
    }
  })

  it('retry.maxRetryAfterMs: the same rule, at the factory and per call', async () => {
    for (const value of BAD_NUMBERS) {
      expect(() => deadlineInterceptor({ retry: { maxRetryAfterMs: value as number } })).toThrow(
        /maxRetryAfterMs/,
      )
    }
    const fetch = client()
    const error = await rejection(
      fetch('http://127.0.0.1:1/', { retry: { maxRetryAfterMs: Number.POSITIVE_INFINITY } }),
    )
    expect(error).toBeInstanceOf(RangeError)
    expect(String(error)).toMatch(/maxRetryAfterMs/)
  })
})

describe('retry rules', () => {
  it('emptyRead is "idempotent", true or false: anything else (a string from an env var) is a TypeError', () => {
    for (const emptyRead of ['false', 'never', 'always', 1, 0, null]) {
      expect(() => createFetch({ retry: { emptyRead: emptyRead as never } })).toThrow(/emptyRead/)
    }
  })

  it('fastConnectFailure is a boolean', () => {
    for (const fastConnectFailure of ['no', 0, null]) {
      expect(() =>
        deadlineInterceptor({ retry: { fastConnectFailure: fastConnectFailure as never } }),
      ).toThrow(/fastConnectFailure/)
    }
  })

  it('statuses is a list of HTTP error statuses (integers 400–599)', () => {
    for (const statuses of [503, '503', ['503'], [5.5], [1000], [Number.NaN]]) {
      expect(() => deadlineInterceptor({ retry: { statuses: statuses as never } })).toThrow(
        /statuses/,
      )
    }
    expect(() => deadlineInterceptor({ retry: { statuses: [429, 503] } })).not.toThrow()
  })

  it('retry itself is an object or false: 0, null, true or a string do not quietly mean "the defaults"', () => {
    for (const retry of [0, null, true, 'none']) {
      expect(() => createFetch({ retry: retry as never })).toThrow(/retry/)
    }
  })

  it('a bad per-call retry rejects the promise fetch returns: fetch() never throws', async () => {
    const fetch = client()
    let returned: Promise<unknown> | undefined
    expect(() => {
      returned = fetch('http://127.0.0.1:1/', { retry: { emptyRead: 'no' as never } })
    }).not.toThrow()
    expect(await rejection(returned!)).toBeInstanceOf(TypeError)
  })

  it('a per-call field left undefined keeps the factory value (field by field)', async () => {
    // 503 first, then 200.
    const server = await serve((_r, i) =>
      i === 0 ? { type: 'respond', status: 503 } : { type: 'respond', body: 'ok' },
    )
    const fetch = client({ retry: { statuses: [503], emptyRead: false } })
    // e.g. `retry: { statuses: config.statuses, emptyRead: config.emptyRead }` with nothing configured
    const res = await fetch(server.url, {
      retry: { statuses: undefined, emptyRead: undefined, maxRetryAfterMs: undefined },
    })
    expect(await res.text()).toBe('ok')
    expect(server.records).toHaveLength(2)
  })
})

describe('a deadline that is not a Deadline', () => {
  it('createFetch: a number of ms (or a Date) as `deadline` rejects with a TypeError naming it, and nothing is sent', async () => {
    const server = await serve(() => ({ type: 'respond', body: 'ok' }))
    for (const deadline of [500, new Date(Date.now() + 500)]) {
      const error = await rejection(client()(server.url, { deadline: deadline as never }))
      expect(error).toBeInstanceOf(TypeError)
      expect(String(error)).toMatch(/deadline must be a Deadline/)
    }
    expect(server.records).toHaveLength(0)
  })

  it('the interceptor: the same, from undici.request', async () => {
    const server = await serve(() => ({ type: 'respond', body: 'ok' }))
    const base = new Agent()
    closers.push(base)
    const error = await rejection(
      request(server.url, {
        dispatcher: base.compose(deadlineInterceptor()),
        deadline: 500,
      } as never),
    )
    expect(String(error)).toMatch(/deadline must be a Deadline/)
    expect(server.records).toHaveLength(0)
  })
})
