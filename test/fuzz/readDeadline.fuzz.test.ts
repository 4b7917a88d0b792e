import {
  DEADLINE_HEADER,
  DEADLINE_SOURCES,
  DEFAULT_INGRESS_MAX_MS,
  type DeadlineSource,
  ENVOY_TIMEOUT_HEADER,
  GRPC_TIMEOUT_HEADER,
  MAX_TIMER_MS,
  readDeadline,
} from '@hourglass/core'
import fc from 'fast-check'
import { beforeEach, describe, expect, it } from 'vitest'
import { fuzzRuns } from '../support/fuzzRuns.js'

/**
 * 10,000 cases for the millisecond headers and as many for `grpc-timeout` in
 * `npm test` (50,000 each until session 50; 200,000 under
 * `HOURGLASS_SOAK=long`, or `HOURGLASS_FUZZ_RUNS`), each property asserting
 * it drew every header container, refused and read options, and for each
 * header a valid and an invalid value (and Envoy's 0, no deadline), and a
 * clamped one,
 * against oracles written from the wire format (DESIGN.md) rather than from
 * the parser: whole ASCII digits for milliseconds; 1–8 digits and a unit for
 * gRPC, converted exactly in BigInt nanoseconds. Inputs are random and
 * hostile: Unicode digits, signs, exponents, hex, whitespace of every kind,
 * comma-joined and repeated values, 10 000-character values, `__proto__`
 * header names. The parser answers a typed result or lists the value as
 * invalid; it never throws on a header (a NaN `maxMs` or `minMs` option is a
 * RangeError), never grants more than it was given, never
 * pollutes a prototype.
 */
const RUNS = fuzzRuns(10_000, 200_000)

/**
 * One value as it reaches the parser: a number as its string, a repeated
 * header (an array of more than one) as invalid. Surrounding whitespace is
 * HTTP's optional whitespace, spaces and tabs only (RFC 9110 §5.6.3): a
 * U+00A0, a BOM or a vertical tab around the digits makes the value invalid.
 */
function single(raw: unknown): string | undefined {
  if (Array.isArray(raw)) return raw.length === 1 ? single(raw[0]) : undefined
  // A whole number as the digits a header carries (String() writes 1e21 up in exponent form).
  // A fraction > 0 as its decimal text, never an exponent (String(1e-7) is '1e-7').
  if (typeof raw === 'number') {
    if (Number.isInteger(raw)) return BigInt(raw).toString()
    const text = String(raw)
    return Number.isFinite(raw) && raw > 0 && text.includes('e') ? raw.toFixed(20) : text
  }
  return typeof raw === 'string' ? raw.replace(/^[ \t]+|[ \t]+$/g, '') : undefined
}

/** Milliseconds as the wire format defines them; undefined = invalid. */
function msOracle(raw: unknown): bigint | undefined {
  const value = single(raw)
  if (value === undefined) return undefined
  // Decimal ms are rounded down (never more than was given); a negative
  // value is a deadline already past: 0 ms left.
  const match = /^(-?)([0-9]+)(?:\.[0-9]+)?$/.exec(value)
  if (!match) return undefined
  if (match[1] === '-') return 0n
  // Of any length: past 2^31-1 ms (past what a double holds, too) is still
  // well-formed: valid, and clamped to maxMs below.
  return BigInt(match[2]!)
}

const NS_PER_UNIT: Record<string, bigint> = {
  H: 3_600_000_000_000n,
  M: 60_000_000_000n,
  S: 1_000_000_000n,
  m: 1_000_000n,
  u: 1_000n,
  n: 1n,
}

/** grpc-timeout as gRPC's PROTOCOL-HTTP2 defines it, floored to whole ms; undefined = invalid. */
function grpcOracle(raw: unknown): bigint | undefined {
  const value = single(raw)
  if (value === undefined) return undefined
  const match = /^([0-9]{1,8})([HMSmun])$/.exec(value)
  if (!match) return undefined
  const ms = (BigInt(match[1]!) * NS_PER_UNIT[match[2]!]!) / 1_000_000n
  // Past 2^31-1 ms is still well-formed: valid, and clamped to maxMs below.
  return ms
}

/** Well-formed, and no deadline at all: Envoy's `x-envoy-expected-rq-timeout-ms: 0` (its "no timeout"). */
const NO_DEADLINE = 'no deadline'

const oracle = (header: DeadlineSource, raw: unknown): bigint | undefined | typeof NO_DEADLINE => {
  if (header === GRPC_TIMEOUT_HEADER) return grpcOracle(raw)
  const ms = msOracle(raw)
  // 0 itself is Envoy's "no timeout"; a fraction of a ms rounded down to 0 is 0 ms left.
  return header === ENVOY_TIMEOUT_HEADER && ms === 0n && Number(single(raw)) === 0
    ? NO_DEADLINE
    : ms
}

const digits = fc.stringMatching(/^[0-9]{0,14}$/)
const hostileText = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\t42\t',
    '42\u00a0', // no-break space: not HTTP whitespace
    '\ufeff42',
    '\u200b1',
    '١٢٣', // Arabic-Indic digits
    '１２３', // full-width digits
    '𝟙𝟚𝟛',
    '-0',
    '+5',
    '1e3',
    '0x10',
    '0b1',
    '1_000',
    '00000000001',
    '2147483647',
    '2147483648',
    '9'.repeat(400),
    'NaN',
    'Infinity',
    '1.',
    '.5',
    '1,2',
    '5, 5',
    '__proto__',
    'constructor',
    'toString',
    '\u0000',
    '\ud800',
    '0'.repeat(10_000),
  ),
  fc.string({ maxLength: 24 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  digits,
  fc
    .tuple(
      fc.constantFrom('', ' ', '\t', '-', '+', '0'),
      digits,
      fc.constantFrom('', ' ', '\t', '.', '.0', ',', 'ms'),
    )
    .map(([a, b, c]) => a + b + c),
)

const grpcValue = fc.oneof(
  fc
    .tuple(
      fc.constantFrom('', ' ', '-', '+', '0', '\t'),
      fc.stringMatching(/^[0-9]{0,11}$/),
      fc.constantFrom('H', 'M', 'S', 'm', 'u', 'n', 'h', 's', 'U', 'N', 'ms', 'Sn', '', ' ', '.5S'),
      fc.constantFrom('', ' ', ',', ', 1S'),
    )
    .map(([a, b, c, d]) => a + b + c + d),
  fc.constantFrom(
    '99999999H',
    '99999999M',
    '2147483S',
    '2147484S',
    '35791H',
    '35792H',
    '0n',
    '999999n',
    '1000000n',
  ),
  hostileText,
)

/** A header value as any of the header containers can carry it. */
const carried = (text: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 8, arbitrary: text },
    { weight: 1, arbitrary: fc.array(text, { minLength: 1, maxLength: 3 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        0,
        1,
        -1,
        1.5,
        Number.NaN,
        Number.POSITIVE_INFINITY,
        2 ** 31,
        1e308,
      ),
    },
  )

type Raw = string | string[] | number

let cases = 0
/** The branches the cases reached: container, refused options, each header's outcome. */
const drawn = new Set<string>()

function check(
  values: Partial<Record<DeadlineSource, Raw>>,
  opts: { maxMs?: number; minMs?: number; sources?: DeadlineSource[] },
  form: 'record' | 'proto-record' | 'upper-case' | 'headers',
): boolean {
  let input: Parameters<typeof readDeadline>[0]
  if (form === 'headers') {
    const headers = new Headers()
    for (const [name, value] of Object.entries(values)) {
      try {
        for (const v of Array.isArray(value) ? value : [value]) headers.append(name, String(v))
      } catch {
        // A value WHATWG Headers refuses cannot arrive this way: skip it.
      }
    }
    input = headers
    // What the Headers object actually holds (joined, trimmed) is the truth for the oracle.
    values = Object.fromEntries(
      DEADLINE_SOURCES.flatMap((h) => (headers.has(h) ? [[h, headers.get(h)!]] : [])),
    )
  } else if (form === 'proto-record') {
    // JSON.parse makes `__proto__` an own key, as a header parser building a record could.
    const parsed = JSON.parse(
      `{"__proto__":{"${DEADLINE_HEADER}":"1"},"constructor":"5",${Object.entries(values)
        .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`)
        .join(',')}}`.replace(',}', '}'),
    ) as Record<string, Raw | null>
    input = parsed as Parameters<typeof readDeadline>[0]
    // NaN and Infinity became null (absent) on the way.
    values = Object.fromEntries(
      DEADLINE_SOURCES.flatMap((h) => (parsed[h] == null ? [] : [[h, parsed[h]]])),
    )
  } else if (form === 'upper-case') {
    input = Object.fromEntries(Object.entries(values).map(([k, v]) => [k.toUpperCase(), v]))
  } else {
    input = values
  }
  cases++
  drawn.add(`form ${form}`)
  // Options: absent = the default; otherwise whole ms within [0, 2^31-1].
  const option = (v: number | undefined, fallback: number) =>
    v === undefined ? fallback : Math.min(Math.max(0, Math.floor(v)), MAX_TIMER_MS)
  // Read in order, maxMs then minMs: a NaN (`Number()` of an unset
  // variable) is a RangeError naming the option, never a lifted cap (core's
  // README); so is a negative one (clamped, every inbound budget read 0 ms
  // without a word); then a minMs above the maxMs given (as whole ms, before
  // either is cut to 2^31-1: clamped, a value came back below the floor asked for).
  // That is the whole answer for such options, whatever the headers hold.
  const refusal = (() => {
    for (const name of ['maxMs', 'minMs'] as const) {
      const value = opts[name]
      if (Number.isNaN(value)) return `readDeadline: ${name} must be a number of ms, got NaN`
      if (value !== undefined && value < 0) {
        return `readDeadline: ${name} must be a number of ms ≥ 0, got ${value}`
      }
    }
    // Compared as given (whole ms), before either is cut to the wire's 2^31-1.
    return opts.maxMs !== undefined && Math.floor(opts.minMs ?? 0) > Math.floor(opts.maxMs)
      ? `readDeadline: minMs (${opts.minMs}) must not be more than maxMs (${opts.maxMs})`
      : undefined
  })()
  drawn.add(refusal === undefined ? 'options read' : 'options refused')
  if (refusal !== undefined) {
    let thrown: unknown
    try {
      readDeadline(input, opts)
    } catch (error) {
      thrown = error
    }
    return thrown instanceof RangeError && thrown.message === refusal
  }
  const result = readDeadline(input, opts)

  const trusted = opts.sources ?? DEADLINE_SOURCES
  let none = 0
  const valid = trusted.flatMap((h) => {
    if (!(h in values)) return []
    const raw = values[h]
    const ms = raw === undefined ? undefined : oracle(h, raw)
    if (raw !== undefined) {
      drawn.add(
        `${h} ${ms === undefined ? 'invalid' : ms === NO_DEADLINE ? 'no deadline' : 'valid'}`,
      )
    }
    if (ms === NO_DEADLINE) {
      none++
      return []
    }
    return ms === undefined ? [] : [ms]
  })
  const smallest = valid.reduce<bigint | undefined>(
    (a, b) => (a === undefined || b < a ? b : a),
    undefined,
  )
  // No maxMs: the ingress cap, raised to a larger minMs.
  const maxMs = option(opts.maxMs, Math.max(DEFAULT_INGRESS_MAX_MS, option(opts.minMs, 0)))
  const minMs = Math.min(option(opts.minMs, 0), maxMs)
  const expected =
    smallest === undefined ? undefined : Math.min(Math.max(Number(smallest), minMs), maxMs)
  if (expected !== undefined && expected !== Number(smallest)) drawn.add('clamped')
  const invalidCount =
    trusted.filter((h) => h in values && values[h] !== undefined).length - valid.length - none
  return (
    result.ms === expected &&
    (result.ms === undefined) === (result.source === undefined) &&
    result.clamped === (expected !== undefined && expected !== Number(smallest)) &&
    result.invalid.length === invalidCount &&
    result.invalid.every(
      (i) =>
        trusted.includes(i.header) &&
        typeof i.reason === 'string' &&
        i.reason.length > 0 &&
        i.value.length <= 65,
    )
  )
}

const options = fc.record(
  {
    maxMs: fc.oneof(
      fc.integer({ min: 0, max: 2 ** 31 }),
      fc.constantFrom(Number.NaN, -5, 1e12, 0.5),
    ),
    minMs: fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.constantFrom(Number.NaN, -1, 1e12)),
    sources: fc.subarray([...DEADLINE_SOURCES]),
  },
  { requiredKeys: [] },
)
const form = fc.constantFrom('record', 'proto-record', 'upper-case', 'headers') as fc.Arbitrary<
  'record' | 'proto-record' | 'upper-case' | 'headers'
>

function assertNoPollution() {
  expect(Object.hasOwn(Object.prototype, DEADLINE_HEADER)).toBe(false)
  expect(({} as Record<string, unknown>)[DEADLINE_HEADER]).toBeUndefined()
}

describe('deadline header fuzz', () => {
  beforeEach(() => {
    cases = 0
    drawn.clear()
  })

  /** Every branch `drawn` names, for properties whose cases carry `headers`. */
  function assertDrewEveryBranch(headers: DeadlineSource[], more: string[] = []) {
    if (RUNS < 10_000) return
    const forms = ['headers', 'proto-record', 'record', 'upper-case'].map((f) => `form ${f}`)
    const outcomes = headers.flatMap((h) => [`${h} invalid`, `${h} valid`])
    expect([...drawn].sort()).toEqual(
      [...forms, 'options read', 'options refused', 'clamped', ...outcomes, ...more].sort(),
    )
  }

  it(`x-deadline-remaining-ms and x-envoy-expected-rq-timeout-ms: ${RUNS.toLocaleString('en-US')} hostile values, each read exactly as the wire format says or listed invalid`, () => {
    fc.assert(
      fc.property(
        carried(hostileText),
        fc.option(carried(fc.oneof(digits, hostileText)), { nil: undefined }),
        fc.option(carried(grpcValue), { nil: undefined }),
        options,
        form,
        (ms, envoy, grpc, opts, how) => {
          const values: Partial<Record<DeadlineSource, Raw>> = { [DEADLINE_HEADER]: ms }
          if (envoy !== undefined) values[ENVOY_TIMEOUT_HEADER] = envoy
          if (grpc !== undefined) values[GRPC_TIMEOUT_HEADER] = grpc
          return check(values, opts, how)
        },
      ),
      { numRuns: RUNS },
    )
    expect(cases).toBe(RUNS)
    assertDrewEveryBranch(
      [DEADLINE_HEADER, ENVOY_TIMEOUT_HEADER, GRPC_TIMEOUT_HEADER],
      [`${ENVOY_TIMEOUT_HEADER} no deadline`],
    )
    assertNoPollution()
  }, 120_000)

  it(`grpc-timeout: ${RUNS.toLocaleString('en-US')} hostile values, converted exactly (BigInt nanoseconds, floored to ms) or listed invalid`, () => {
    fc.assert(
      fc.property(
        carried(grpcValue),
        fc.option(carried(digits), { nil: undefined }),
        options,
        form,
        (grpc, ms, opts, how) => {
          const values: Partial<Record<DeadlineSource, Raw>> = { [GRPC_TIMEOUT_HEADER]: grpc }
          if (ms !== undefined) values[DEADLINE_HEADER] = ms
          return check(values, opts, how)
        },
      ),
      { numRuns: RUNS },
    )
    expect(cases).toBe(RUNS)
    assertDrewEveryBranch([GRPC_TIMEOUT_HEADER, DEADLINE_HEADER])
    assertNoPollution()
  }, 120_000)
})
