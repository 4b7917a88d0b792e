import {
  DEADLINE_SOURCES,
  Deadline,
  type DeadlineSource,
  isCallersBudget,
  MAX_TIMER_MS,
  ManualClock,
  readDeadline,
  writeDeadline,
} from '@hourglass/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

// Not exported by name from the index yet (core's index.ts is not ours to edit): the literal is the contract.
const STAINLESS: DeadlineSource = 'x-stainless-timeout'

describe('readDeadline', () => {
  it('reads each source, and the smallest valid value wins', () => {
    expect(readDeadline({ 'x-deadline-remaining-ms': '1500' })).toEqual({
      ms: 1500,
      source: 'x-deadline-remaining-ms',
      clamped: false,
      invalid: [],
    })
    expect(readDeadline({ 'grpc-timeout': '2S' }).ms).toBe(2000)
    expect(readDeadline({ 'x-envoy-expected-rq-timeout-ms': '750' }).ms).toBe(750)
    const all = readDeadline({
      'x-deadline-remaining-ms': '1500',
      'grpc-timeout': '900m',
      'x-envoy-expected-rq-timeout-ms': '1200',
    })
    expect(all).toMatchObject({ ms: 900, source: 'grpc-timeout' })
  })

  it('decodes every grpc-timeout unit, rounding sub-millisecond values down', () => {
    // The timer's limit as the cap: this is the decoding, not the clamp.
    const ms = (v: string) => readDeadline({ 'grpc-timeout': v }, { maxMs: MAX_TIMER_MS }).ms
    expect(ms('1H')).toBe(3_600_000)
    expect(ms('2M')).toBe(120_000)
    expect(ms('3S')).toBe(3000)
    expect(ms('45m')).toBe(45)
    expect(ms('2500u')).toBe(2)
    expect(ms('99999999n')).toBe(99)
    expect(ms('12345678m')).toBe(12_345_678)
  })

  it('reads a negative ms value as a deadline already past: 0 ms left, not the default budget', () => {
    // A client that sends `deadline - now` as it is, once its deadline has
    // gone by. Listed invalid, the ingress fell back to its default budget:
    // a whole budget of work for a caller whose own had run out.
    for (const value of ['-5', '-1500.5', '-0']) {
      expect(readDeadline({ 'x-deadline-remaining-ms': value }), value).toEqual({
        ms: 0,
        source: 'x-deadline-remaining-ms',
        clamped: false,
        invalid: [],
      })
    }
    // Envoy's too; only its `0` itself is "no timeout".
    expect(readDeadline({ 'x-envoy-expected-rq-timeout-ms': '-5' }).ms).toBe(0)
    // The smallest wins: a past deadline beside a longer one is past.
    expect(readDeadline({ 'x-deadline-remaining-ms': '-5', 'grpc-timeout': '3S' }).ms).toBe(0)
  })

  it('accepts WHATWG Headers and any letter case', () => {
    expect(readDeadline(new Headers({ 'X-Deadline-Remaining-Ms': '42' })).ms).toBe(42)
    expect(readDeadline({ 'X-Deadline-Remaining-Ms': '43' }).ms).toBe(43)
  })

  it.each([
    ['x-deadline-remaining-ms', '-', 'not a number'],
    ['x-deadline-remaining-ms', '--5', 'not a number'],
    ['x-deadline-remaining-ms', '.5', 'not a number'],
    ['x-deadline-remaining-ms', '1.', 'not a number'],
    ['x-deadline-remaining-ms', '', 'empty'],
    ['x-deadline-remaining-ms', 'abc', 'not a number'],
    ['x-deadline-remaining-ms', '0x10', 'not a number'],
    ['x-deadline-remaining-ms', '1e3', 'not a number'],
    ['x-deadline-remaining-ms', '100, 200', 'repeated header (comma-joined values)'],
    ['grpc-timeout', '123456789m', 'more than 8 digits'],
    ['grpc-timeout', '10s', 'not a grpc-timeout (1-8 digits and H, M, S, m, u or n)'],
    ['grpc-timeout', '10', 'not a grpc-timeout (1-8 digits and H, M, S, m, u or n)'],
    ['grpc-timeout', '-1S', 'not a grpc-timeout (1-8 digits and H, M, S, m, u or n)'],
    ['x-envoy-expected-rq-timeout-ms', 'NaN', 'not a number'],
  ])('reports %s: %j as invalid (%s) and never throws', (header, value, reason) => {
    const result = readDeadline({ [header]: value })
    expect(result.ms).toBeUndefined()
    expect(result.source).toBeUndefined()
    expect(result.invalid).toEqual([{ header, value, reason }])
  })

  it('reports repeated headers (arrays) as invalid and still uses the valid ones', () => {
    const result = readDeadline({ 'x-deadline-remaining-ms': ['100', '200'], 'grpc-timeout': '1S' })
    expect(result.ms).toBe(1000)
    expect(result.invalid).toEqual([
      { header: 'x-deadline-remaining-ms', value: '100, 200', reason: 'repeated header' },
    ])
  })

  it('clamps to maxMs and minMs, and reports the clamp', () => {
    expect(readDeadline({ 'x-deadline-remaining-ms': '60000' }, { maxMs: 10_000 })).toMatchObject({
      ms: 10_000,
      clamped: true,
    })
    expect(readDeadline({ 'x-deadline-remaining-ms': '3' }, { minMs: 20 })).toMatchObject({
      ms: 20,
      clamped: true,
    })
    expect(readDeadline({ 'x-deadline-remaining-ms': '0' })).toMatchObject({
      ms: 0,
      clamped: false,
    })
  })

  it('reads only the trusted sources', () => {
    const headers = { 'x-deadline-remaining-ms': '100', 'grpc-timeout': '50m' }
    expect(readDeadline(headers, { sources: [] }).ms).toBeUndefined()
    expect(readDeadline(headers, { sources: ['x-deadline-remaining-ms'] }).ms).toBe(100)
  })

  it('x-stainless-timeout (seconds) is read only when trusted, and the smallest trusted source wins', () => {
    const sdk = { 'x-stainless-timeout': '1', 'x-deadline-remaining-ms': '2500' }
    // Opt-in: the openai SDK sends its 600 s default on every request.
    expect(readDeadline(sdk)).toMatchObject({ ms: 2500, source: 'x-deadline-remaining-ms' })
    const all = [...DEADLINE_SOURCES, STAINLESS] as const
    expect(readDeadline(sdk, { sources: all })).toEqual({
      ms: 1999,
      source: 'x-stainless-timeout',
      clamped: false,
      invalid: [],
    })
    expect(readDeadline({ ...sdk, 'grpc-timeout': '900m' }, { sources: all }).ms).toBe(900)
    const ms = (v: string) =>
      readDeadline({ 'X-Stainless-Timeout': v }, { sources: all, maxMs: MAX_TIMER_MS }).ms
    // Whole seconds are truncated by the SDK (Math.trunc(ms / 1000)): the
    // client's timer is somewhere in [N, N + 1) s, read as the most it can be.
    expect(ms('600')).toBe(600_999)
    expect(ms('1')).toBe(1999)
    expect(ms(' 3 ')).toBe(3999)
    // Decimal seconds are exact.
    expect(ms('1.5')).toBe(1500)
    expect(ms('0.25')).toBe(250)
    expect(ms('2.125')).toBe(2125)
    expect(ms('1.0')).toBe(1000)
    expect(
      readDeadline({ 'x-stainless-timeout': '600' }, { sources: all, maxMs: 300_000 }),
    ).toMatchObject({
      ms: 300_000,
      clamped: true,
    })
  })

  it.each(['0', '0.000'])(
    'ignores x-stainless-timeout: %j (a sub-second timeout the SDK truncated): no deadline, not malformed',
    (value) => {
      const result = readDeadline(
        { 'x-stainless-timeout': value, 'grpc-timeout': 'bad' },
        { sources: [STAINLESS, 'grpc-timeout'] },
      )
      expect(result).toEqual({
        ms: undefined,
        source: undefined,
        clamped: false,
        invalid: [expect.objectContaining({ header: 'grpc-timeout' })],
      })
    },
  )

  it.each([
    ['-1', 'negative'],
    ['1e3', 'not a number of seconds'],
    ['1.', 'not a number of seconds'],
    ['.5', 'not a number of seconds'],
    ['5s', 'not a number of seconds'],
    ['', 'empty'],
    ['1, 2', 'repeated header (comma-joined values)'],
  ])('reports x-stainless-timeout: %j as invalid (%s) when trusted', (value, reason) => {
    const result = readDeadline({ 'x-stainless-timeout': value }, { sources: [STAINLESS] })
    expect(result).toEqual({
      ms: undefined,
      source: undefined,
      clamped: false,
      invalid: [{ header: STAINLESS, value, reason }],
    })
  })

  it('property: never throws on any string, and ms is a whole number in range or undefined', () => {
    const headerName = fc.constantFrom(
      'x-deadline-remaining-ms',
      'grpc-timeout',
      'x-envoy-expected-rq-timeout-ms',
      'x-stainless-timeout',
    )
    fc.assert(
      fc.property(
        fc.dictionary(
          headerName,
          fc.oneof(
            fc.string(),
            fc.string({ unit: 'grapheme' }),
            fc.stringMatching(/^-?[0-9]{0,12}[HMSmun.,]?[0-9]*$/),
          ),
        ),
        (headers) => {
          const result = readDeadline(headers, {
            maxMs: 30_000,
            sources: [...DEADLINE_SOURCES, STAINLESS],
          })
          if (result.ms !== undefined) {
            expect(Number.isInteger(result.ms)).toBe(true)
            expect(result.ms).toBeGreaterThanOrEqual(0)
            expect(result.ms).toBeLessThanOrEqual(30_000)
          } else {
            expect(result.source).toBeUndefined()
          }
          expect(result.invalid.length + (result.ms === undefined ? 0 : 1)).toBeLessThanOrEqual(
            Object.keys(headers).length,
          )
        },
      ),
      { numRuns: 5000 },
    )
  })

  it('writeDeadline caps what it writes at 2^31-1 ms, the most a reader accepts', () => {
    const headers: Record<string, string> = {}
    const far = Deadline.after(30 * 24 * 3600 * 1000, { clock: new ManualClock() })
    expect(writeDeadline(headers, far)).toBe(MAX_TIMER_MS)
    expect(readDeadline(headers, { maxMs: 10_000 })).toMatchObject({
      ms: 10_000,
      clamped: true,
      invalid: [],
    })
  })

  it('property: writeDeadline then readDeadline round-trips the whole milliseconds left', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (budget, spentFraction) => {
          const c = new ManualClock()
          const d = Deadline.after(budget, { clock: c })
          c.advance(budget * spentFraction)
          const headers: Record<string, string> = {}
          const written = writeDeadline(headers, d)
          expect(written).toBe(Math.floor(d.remaining()))
          expect(readDeadline(headers, { maxMs: MAX_TIMER_MS }).ms).toBe(written)
          d.dispose()
        },
      ),
      { numRuns: 2000 },
    )
  })
})

describe("readDeadline with lowerCaseNames (Node's own headers)", () => {
  /** The record, counting how often its names are listed (the case-insensitive walk). */
  function counted(record: Record<string, string>) {
    const seen = { walks: 0 }
    const headers = new Proxy(record, {
      ownKeys(target) {
        seen.walks++
        return Reflect.ownKeys(target)
      },
    })
    return { headers, seen }
  }

  it('looks each name up: no walk over the headers, whether a deadline header is there or not', () => {
    for (const record of [
      { host: 'h', accept: '*/*', 'user-agent': 'u' },
      { host: 'h', 'x-deadline-remaining-ms': '250' },
      { host: 'h', 'grpc-timeout': '2S', 'x-envoy-expected-rq-timeout-ms': '900' },
    ]) {
      const { headers, seen } = counted(record)
      const lower = readDeadline(headers, { lowerCaseNames: true })
      expect(seen.walks).toBe(0)
      // The same reading as without the option.
      expect(lower).toEqual(readDeadline(record))
    }
    // Without it, every name not found walks the headers.
    const { headers, seen } = counted({ host: 'h' })
    readDeadline(headers)
    expect(seen.walks).toBe(DEADLINE_SOURCES.length)
  })

  it('a name in another letter case is not looked for (what the option says: the names are lower case)', () => {
    const record = { 'X-Deadline-Remaining-Ms': '250' }
    expect(readDeadline(record).ms).toBe(250)
    expect(readDeadline(record, { lowerCaseNames: true }).ms).toBeUndefined()
  })

  it('a Headers matches any case itself, with or without the option', () => {
    const headers = new Headers({ 'X-Deadline-Remaining-Ms': '250' })
    expect(readDeadline(headers, { lowerCaseNames: true }).ms).toBe(250)
  })
})

describe('writeDeadline', () => {
  it('writes to Headers, to a Node response and to a record, and skips never()', () => {
    const c = new ManualClock()
    const d = Deadline.after(1234.9, { clock: c })
    const h = new Headers()
    writeDeadline(h, d)
    expect(h.get('x-deadline-remaining-ms')).toBe('1234')
    const set: string[] = []
    writeDeadline({ setHeader: (n: string, v: string) => set.push(`${n}=${v}`) }, d)
    expect(set).toEqual(['x-deadline-remaining-ms=1234'])
    const record: Record<string, string> = {}
    expect(writeDeadline(record, Deadline.never())).toBeUndefined()
    expect(record).toEqual({})
  })

  it('writes 0 for an expired deadline, but nothing for an expired observe-only one', () => {
    const c = new ManualClock()
    const enforced = Deadline.after(10, { clock: c })
    const observed = Deadline.after(10, { clock: c, observe: true })
    c.advance(20)
    expect(writeDeadline({}, enforced)).toBe(0)
    expect(writeDeadline({}, observed)).toBeUndefined()
  })
})

describe('isCallersBudget', () => {
  it("is the caller's budget only when a trusted header sent it and maxMs did not cut it", () => {
    expect(isCallersBudget(readDeadline({ 'x-deadline-remaining-ms': '1500' }))).toBe(true)
    expect(
      isCallersBudget(readDeadline({ 'x-deadline-remaining-ms': '5000' }, { maxMs: 200 })),
    ).toBe(false)
    // None sent (or none trusted): the server's defaultMs, not the caller's.
    expect(isCallersBudget(readDeadline({}))).toBe(false)
    expect(
      isCallersBudget(readDeadline({ 'x-deadline-remaining-ms': '1500' }, { sources: [] })),
    ).toBe(false)
  })
})
