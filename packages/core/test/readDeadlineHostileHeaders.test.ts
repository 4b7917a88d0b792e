import { DEADLINE_HEADER, readDeadline } from '@hourglass/core'
import { expect, it } from 'vitest'

// readDeadline is called by every ingress (express, gRPC, the gateway) and by
// otel's propagator on whatever container the request's headers come in.
// A container whose reads throw — a Proxy, a getter, a `get` — made
// readDeadline throw the container's own error (or a bare string) through
// the ingress that asked; a `get` returning a number (a Map) threw
// "raw.join is not a function". What the headers hold must give a result.

const unreadable = { value: '', reason: 'unreadable (reading it threw)' }

it('a container whose reads throw gives a result: every trusted header listed as unreadable, no budget', () => {
  const containers: Record<string, object> = {
    'a Proxy whose traps throw': new Proxy(
      {},
      {
        get() {
          throw new Error('trap')
        },
        has() {
          throw new Error('trap')
        },
        ownKeys() {
          throw new Error('trap')
        },
        getOwnPropertyDescriptor() {
          throw new Error('trap')
        },
      },
    ),
    'a get() that throws': {
      get() {
        throw new Error('get threw')
      },
    },
    'a get() that throws a string': {
      get() {
        throw 'not even an Error'
      },
    },
    'a getter for get': Object.defineProperty({}, 'get', {
      get() {
        throw new Error('getter')
      },
    }),
  }
  for (const [label, headers] of Object.entries(containers)) {
    const read = readDeadline(headers as never)
    expect(read, label).toEqual({
      ms: undefined,
      source: undefined,
      clamped: false,
      invalid: [
        { header: 'x-deadline-remaining-ms', ...unreadable },
        { header: 'grpc-timeout', ...unreadable },
        { header: 'x-envoy-expected-rq-timeout-ms', ...unreadable },
      ],
    })
  }
})

it('one unreadable header does not hide a readable one: the valid value still wins', () => {
  const headers = Object.defineProperties(
    {},
    {
      [DEADLINE_HEADER]: {
        enumerable: true,
        get() {
          throw new Error('getter')
        },
      },
      'grpc-timeout': { enumerable: true, value: '250m' },
    },
  )
  expect(readDeadline(headers as never)).toEqual({
    ms: 250,
    source: 'grpc-timeout',
    clamped: false,
    invalid: [{ header: DEADLINE_HEADER, ...unreadable }],
  })
  // A value whose toString throws is unreadable too.
  const value = {
    toString() {
      throw new Error('toString')
    },
  }
  expect(readDeadline({ [DEADLINE_HEADER]: value } as never).invalid).toEqual([
    { header: DEADLINE_HEADER, ...unreadable },
  ])
})

it('any get(): a Map of numbers is read like a record of numbers', () => {
  expect(readDeadline(new Map([[DEADLINE_HEADER, 500]]) as never)).toMatchObject({
    ms: 500,
    source: DEADLINE_HEADER,
    invalid: [],
  })
  expect(readDeadline(new Map([['grpc-timeout', ['1S', '2S']]]) as never).invalid).toEqual([
    { header: 'grpc-timeout', value: '1S, 2S', reason: 'repeated header' },
  ])
})

it('headers that are not an object at all is a TypeError that says so (a caller bug, not a request)', () => {
  for (const headers of [undefined, null, 'x-deadline-remaining-ms: 5']) {
    expect(() => readDeadline(headers as never)).toThrow(TypeError)
    expect(() => readDeadline(headers as never)).toThrow(/^readDeadline: headers must be an object/)
  }
})

it('odd options: null reads as none, a NaN cap or a string of sources is refused, not lifted or searched', () => {
  const headers = { [DEADLINE_HEADER]: '5000' }
  expect(readDeadline(headers, null).ms).toBe(5000)
  // Number(process.env.UNSET) is NaN: the cap on an untrusted budget went
  // silently to 2^31-1 ms.
  expect(() => readDeadline(headers, { maxMs: Number.NaN })).toThrow(
    new RangeError('readDeadline: maxMs must be a number of ms, got NaN'),
  )
  expect(() => readDeadline(headers, { minMs: '5' as never })).toThrow(TypeError)
  // A string was searched as text.
  expect(() =>
    readDeadline({ 'grpc-timeout': '1m' }, { sources: 'grpc-timeout' as never }),
  ).toThrow(/readDeadline: sources must be an array of header names, got 'grpc-timeout'/)
})

it("only HTTP's optional whitespace (space, tab) is stripped: a Latin-1 NBSP or another Unicode space leaves a value malformed", () => {
  // Node decodes header bytes as Latin-1: a 0xA0 byte arrives as U+00A0,
  // which String.prototype.trim strips (with \v, \f, U+2003, …). RFC 9110
  // §5.6.3 allows only SP and HTAB around a value, so "500\u00a0" is no 500.
  expect(readDeadline({ [DEADLINE_HEADER]: ' \t500\t ' }).ms).toBe(500)
  expect(readDeadline({ 'grpc-timeout': '\t2S ' }).ms).toBe(2000)
  for (const space of ['\u00a0', '\u000b', '\u000c', '\u2003', '\ufeff', '\u3000']) {
    for (const [header, value] of [
      [DEADLINE_HEADER, `500${space}`],
      ['grpc-timeout', `${space}2S`],
      ['x-envoy-expected-rq-timeout-ms', `500${space}`],
      ['x-stainless-timeout', `${space}1.5`],
    ] as const) {
      const read = readDeadline(
        { [header]: value },
        { sources: [header as typeof DEADLINE_HEADER] },
      )
      expect(read.ms, `${header}: ${JSON.stringify(value)}`).toBeUndefined()
      expect(read.invalid.map((i) => i.header)).toEqual([header])
    }
  }
})
