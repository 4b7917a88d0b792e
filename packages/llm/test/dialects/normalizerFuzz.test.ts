import { MAX_TIMER_MS } from '@hourglass/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { fuzzRuns } from '../../../../test/support/fuzzRuns.js'
import type { DialectName } from '../../src/dialects/Dialect.js'
import { dialects } from '../../src/dialects/dialects.js'
import { ERROR_KINDS } from '../../src/errors/errorKinds.js'
import { isProviderReplyError } from '../../src/errors/ProviderReplyError.js'
import type { NormalizedError } from '../../src/types.js'
import { json, jsonValue } from '../support/jsonValue.js'

/**
 * Random hostile input for every normaliser and stream parser: 4,000 +
 * 2,000 + 1,500 cases in `npm test` (14,000 + 7,000 + 5,000 until session
 * 50), 56,000 + 28,000 + 20,000 under `HOURGLASS_SOAK=long`, or
 * `HOURGLASS_FUZZ_RUNS` each. Each property asserts it drew every dialect
 * and every kind of body (JSON object, SSE-framed, truncated JSON, any JSON,
 * text, binary, the hand-written hostile ones), and the normaliser's every
 * status kind and header container, so the smaller counts still reach each
 * branch. Nothing may throw (stream parsers only their typed
 * error), nothing may pollute a prototype, and every result is well formed.
 * The cases per normaliser built from mutated real bodies (`__proto__`
 * keys, deep nesting, invalid UTF-8, 1 MB) are
 * test/fuzz/normalizers.fuzz.test.ts; these were 105,000 more of the same
 * kinds, 7–15 s of CPU in `npm test`.
 */

const names = Object.keys(dialects) as DialectName[]
const KINDS: ReadonlySet<string> = new Set(ERROR_KINDS)

const CODES = [
  'insufficient_quota',
  'rate_limit_exceeded',
  'Throttling.RateQuota',
  'DataInspectionFailed',
  'RateLimitExceeded.EndpointRPMExceeded',
  'ServerOverloaded',
  'overloaded_error',
  'RESOURCE_EXHAUSTED',
  336501,
  17,
  18,
  0,
  -1,
  1e308,
  null,
  true,
  '__proto__',
  'constructor',
  'toString',
]
const code = fc.oneof(fc.constantFrom(...CODES), fc.string({ maxLength: 12 }), fc.integer())
const anything = jsonValue({ maxDepth: 3 })

const errorObject = fc.record(
  {
    code,
    type: fc.oneof(code, anything),
    status: fc.oneof(fc.constantFrom('RESOURCE_EXHAUSTED', 'UNAVAILABLE', '__proto__'), anything),
    message: fc.oneof(fc.string({ maxLength: 40 }), fc.constant('x'.repeat(3000)), anything),
    details: fc.oneof(
      anything,
      fc.array(
        fc.record({
          '@type': fc.constantFrom(
            'type.googleapis.com/google.rpc.RetryInfo',
            'type.googleapis.com/google.rpc.QuotaFailure',
            'type.googleapis.com/google.rpc.ErrorInfo',
          ),
          retryDelay: fc.oneof(fc.constantFrom('34.4s', '-1s', '1e999s', 'NaNs', ''), anything),
          violations: fc.oneof(
            anything,
            fc.array(fc.record({ quotaValue: fc.oneof(fc.constantFrom('0', 0), anything) })),
          ),
          reason: fc.oneof(fc.constant('API_KEY_INVALID'), anything),
        }),
        { maxLength: 4 },
      ),
    ),
  },
  { requiredKeys: [] },
)

const bodyObject = fc.record(
  {
    error: fc.oneof(errorObject, anything),
    error_code: code,
    error_msg: anything,
    code,
    message: anything,
    type: fc.constantFrom('error', 'message', '__proto__'),
    promptFeedback: fc.oneof(
      fc.record({ blockReason: fc.oneof(fc.constant('SAFETY'), anything) }),
      anything,
    ),
    candidates: anything,
    choices: anything,
  },
  { requiredKeys: [] },
)

const hostile = fc.constantFrom(
  '{"__proto__":{"polluted":"yes","kind":"auth"},"error":{"__proto__":{"polluted":"yes"},"code":"insufficient_quota"}}',
  '{"constructor":{"prototype":{"polluted":"yes"}},"error_code":336501}',
  '{"error":{"code":"toString","type":"hasOwnProperty","message":{"toString":1}}}',
  '[{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}]',
  'data: {"error"',
  '\uFEFF{"error":{}}',
  '<html><body>overloaded</body></html>',
)

/** SSE-framed bodies (an error answer to a streaming request): events of `data:` lines and other fields. */
const sseLine = fc.oneof(
  fc
    .oneof(
      bodyObject.map((o) => JSON.stringify(o)),
      fc.string({ maxLength: 40 }),
    )
    .map((d) => `data: ${d}`),
  bodyObject.map((o) => `data:${JSON.stringify(o)}`),
  fc.constantFrom(
    'data',
    'data:',
    'data: [DONE]',
    'event: error',
    'id:1',
    ':HTTP_STATUS/400',
    ': ping',
    '',
    'retry: x',
  ),
  fc.string({ maxLength: 20 }),
)
const sseFramed = fc
  .tuple(
    fc.array(sseLine, { minLength: 1, maxLength: 6 }),
    fc.constantFrom('\n', '\r\n', '\r'),
    fc.constantFrom('', '\uFEFF', '\n', ' '),
  )
  .map(([lines, eol, lead]) => lead + lines.join(eol))

/** Each kind of body, by the name a property records it under when drawn. */
const BODIES = {
  object: bodyObject.map((o) => JSON.stringify(o)),
  sse: sseFramed,
  truncated: bodyObject.chain((o) => {
    const s = JSON.stringify(o)
    return fc.nat({ max: s.length }).map((cut) => s.slice(0, cut)) // truncated JSON
  }),
  json: json({ maxDepth: 4 }),
  text: fc.string({ maxLength: 200 }),
  binary: fc.string({ unit: 'binary', maxLength: 100 }),
  hostile,
}
type BodyKind = keyof typeof BODIES
const BODY_KINDS = Object.keys(BODIES) as BodyKind[]
/** A body and the kind it was drawn from. */
const taggedBody = fc.oneof(
  ...BODY_KINDS.map((kind) => BODIES[kind].map((text) => ({ kind, text }))),
)

const headerValue = fc.oneof(
  fc.constantFrom(
    'true',
    'false',
    '2',
    '1.5',
    '-3',
    'NaN',
    '6m0s',
    '1s',
    '1h1h1h',
    '99999999999999',
    'Sun, 01 Jun 2025 12:00:30 GMT',
    '2025-06-01T12:00:05Z',
    '',
  ),
  fc.string({ maxLength: 20 }),
)
const headers = fc.dictionary(
  fc.constantFrom(
    'x-should-retry',
    'retry-after',
    'retry-after-ms',
    'x-ratelimit-reset-requests',
    'x-ratelimit-reset-tokens',
    'x-ratelimit-remaining-tokens',
    'anthropic-ratelimit-requests-reset',
    'anthropic-ratelimit-requests-remaining',
    '__proto__',
    'constructor',
  ),
  headerValue,
  { maxKeys: 5 },
)
const status = fc.oneof(
  fc.constantFrom(200, 400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 500, 503, 529),
  fc.integer({ min: -1, max: 1000 }),
)

/** Plain checks, not `expect`: this runs for every case and must stay cheap. */
function wellFormed(e: NormalizedError | undefined): boolean {
  if (e === undefined) return true
  const waitOk =
    e.retryAfterMs === undefined ||
    (Number.isInteger(e.retryAfterMs) && e.retryAfterMs >= 0 && e.retryAfterMs <= MAX_TIMER_MS)
  return (
    KINDS.has(e.kind) &&
    typeof e.retryable === 'boolean' &&
    typeof e.status === 'number' &&
    typeof e.message === 'string' &&
    e.message.length <= 500 &&
    (e.providerCode === undefined || typeof e.providerCode === 'string') &&
    waitOk
  )
}

/** Every kind of body and dialect, as `drawn` names them. */
const EVERY_DRAW = [...BODY_KINDS.map((k) => `body ${k}`), ...names.map((n) => `dialect ${n}`)]

/** That `drawn` holds every kind of body, every dialect, and `more`. */
function assertDrewEveryBranch(drawn: Set<string>, more: string[] = []): void {
  expect([...drawn].sort()).toEqual([...EVERY_DRAW, ...more].sort())
}

const ERROR_RUNS = fuzzRuns(4_000, 56_000)
const STREAM_ERROR_RUNS = fuzzRuns(2_000, 28_000)
const PARSER_RUNS = fuzzRuns(1_500, 20_000)

function assertNoPollution(): void {
  expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false)
  expect(({} as Record<string, unknown>)['kind']).toBeUndefined()
}

describe('normaliser fuzz', () => {
  it('normalizeError never throws, never pollutes, always answers well-formed', () => {
    const drawn = new Set<string>()
    fc.assert(
      fc.property(
        fc.constantFrom(...names),
        status,
        headers,
        taggedBody,
        fc.boolean(),
        (name, s, h, { kind, text: b }, asHeaders) => {
          drawn.add(`dialect ${name}`).add(`body ${kind}`).add(`headers ${asHeaders}`)
          drawn.add(s >= 200 && s < 300 ? 'status 2xx' : 'status not 2xx')
          let input: Headers | Record<string, string> = h
          if (asHeaders) {
            try {
              input = new Headers(Object.entries(h).filter(([k]) => /^[a-z-]+$/.test(k)))
            } catch {
              input = h // values Headers refuses; the record form still exercises the reader
            }
          }
          const e = dialects[name].normalizeError({ status: s, headers: input, body: b })
          // A non-2xx status is never a success, whatever the body says.
          return wellFormed(e) && (e !== undefined || (s >= 200 && s < 300))
        },
      ),
      { numRuns: ERROR_RUNS },
    )
    assertNoPollution()
    if (ERROR_RUNS >= 4_000) {
      assertDrewEveryBranch(drawn, [
        'headers true',
        'headers false',
        'status 2xx',
        'status not 2xx',
      ])
    }
  }, 90_000)

  it('normalizeStreamError never throws and treats every `event: error` frame as an error', () => {
    const drawn = new Set<string>()
    fc.assert(
      fc.property(
        fc.constantFrom(...names),
        fc.option(fc.constantFrom('error', 'message', 'ping'), { nil: undefined }),
        taggedBody,
        (name, event, { kind, text: data }) => {
          drawn.add(`dialect ${name}`).add(`body ${kind}`).add(`event ${event}`)
          const e = dialects[name].normalizeStreamError({ event, data })
          return wellFormed(e) && (event !== 'error' || e !== undefined)
        },
      ),
      { numRuns: STREAM_ERROR_RUNS },
    )
    assertNoPollution()
    if (STREAM_ERROR_RUNS >= 2_000) {
      assertDrewEveryBranch(drawn, [
        'event error',
        'event message',
        'event ping',
        'event undefined',
      ])
    }
  }, 90_000)

  it('stream parsers either translate a frame or throw their typed ProviderReplyError', () => {
    const drawn = new Set<string>()
    fc.assert(
      fc.property(
        fc.constantFrom(...names),
        fc.array(taggedBody, { minLength: 1, maxLength: 4 }),
        (name, frames) => {
          drawn.add(`dialect ${name}`)
          const parser = dialects[name].createStreamParser()
          for (const { kind, text: data } of frames) {
            drawn.add(`body ${kind}`)
            try {
              if (!Array.isArray(parser.parseStreamEvent({ event: undefined, data }))) return false
            } catch (error) {
              if (!isProviderReplyError(error)) throw error
              if (!wellFormed(error.error)) return false
            }
          }
          return Array.isArray(parser.end())
        },
      ),
      { numRuns: PARSER_RUNS },
    )
    assertNoPollution()
    if (PARSER_RUNS >= 1_500) assertDrewEveryBranch(drawn)
  }, 90_000)

  it('a huge or deeply nested body is classified by status without throwing', () => {
    const deep = `${'{"error":'.repeat(100_000)}1${'}'.repeat(100_000)}`
    const deepArray = `${'['.repeat(200_000)}${']'.repeat(200_000)}`
    const huge = JSON.stringify({
      error: { code: 'insufficient_quota', message: 'x'.repeat(3_000_000) },
    })
    const framed = [
      `data: ${deep}\n\n`,
      `data: ${huge}\n\n`,
      'data: {\n'.repeat(100_000), // one event of 100,000 lines under the 1 MiB limit
      'data: {\n\n'.repeat(90_000), // 90,000 events, none of them JSON
      `${'\n'.repeat(500_000)}data: {"error":{}}`,
    ]
    for (const name of names) {
      for (const b of [deep, deepArray, huge, ...framed]) {
        const e = dialects[name].normalizeError({ status: 429, body: b })
        expect(e).toBeDefined()
        expect(wellFormed(e)).toBe(true)
      }
    }
    assertNoPollution()
  })
})
