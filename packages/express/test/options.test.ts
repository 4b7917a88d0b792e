import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { type DeadlineMiddlewareOptions, deadline } from '../src/index.js'

describe('deadline() options', () => {
  it.each([
    [{ defaultMs: 0 }, /defaultMs must be a finite number of ms > 0/],
    [{ defaultMs: Number.NaN }, /defaultMs/],
    [{ maxMs: -1 }, /maxMs must be a finite number of ms > 0/],
    [{ maxMs: Number.POSITIVE_INFINITY }, /maxMs/],
    [{ reserveMs: -1 }, /reserveMs must be a finite number ≥ 0/],
    [{ mode: 'dark' as 'observe' }, /mode must be 'enforce' or 'observe'/],
    [{ trust: ['x-request-timeout' as 'grpc-timeout'] }, /unknown header "x-request-timeout"/],
    [{ plan: { model: -1 } }, /slice "model" must be a positive share/],
    // A hook that is not a function would throw at the first request it reports on
    // (rethrown on the next tick: the process dies), not at boot.
    [{ onExpire: 'log' as unknown as () => void }, /onExpire must be a function, got string/],
    [{ onLateWrite: {} as unknown as () => void }, /onLateWrite must be a function, got object/],
    [{ onInvalidHeader: 1 as unknown as () => void }, /onInvalidHeader must be a function/],
    // Nothing left for the handler: every request would be answered 504 on arrival.
    [{ maxMs: 50, reserveMs: 50 }, /reserveMs \(50\) must be less than maxMs \(50\)/],
    [{ maxMs: 50, reserveMs: 100 }, /reserveMs \(100\) must be less than maxMs \(50\)/],
    // …or every request that carries no deadline header.
    [{ defaultMs: 20, reserveMs: 30 }, /reserveMs \(30\) must be less than defaultMs \(20\)/],
    // The same with the default reserve, which is never below its floor (10 ms).
    [
      { maxMs: 10 },
      /maxMs \(10\) must be more than the default reserveMs's floor \(10 ms\): every request would/,
    ],
    [{ defaultMs: 8 }, /defaultMs \(8\) must be more than the default reserveMs's floor \(10 ms\)/],
    [{ defaultMs: 60_000, maxMs: 5 }, /maxMs \(5\)/],
    // Values of the wrong type (often from an environment variable), named with their type.
    [
      { maxMs: '100' as unknown as number },
      /maxMs must be a finite number of ms > 0, got '100' \(a string\)/,
    ],
    [
      { reserveMs: '10' as unknown as number },
      /reserveMs must be a finite number ≥ 0, got '10' \(a string\)/,
    ],
    [
      { trust: 'grpc-timeout' as unknown as [] },
      /trust must be an array of header names, got 'grpc-timeout' \(a string\)/,
    ],
    [
      { strict: 'false' as unknown as boolean },
      /strict must be true or false, got 'false' \(a string\)/,
    ],
    [
      { clock: {} as never },
      /clock must be a Clock \(now, setTimeout and clearTimeout functions\), got an object/,
    ],
  ])('rejects %j when the middleware is created, not per request', (options, message) => {
    expect(() => deadline(options)).toThrow(message)
  })

  it.each([
    // A value of another option, written as a key of its own.
    [
      'observe',
      { observe: true },
      /^unknown option "observe" \(did you mean mode: 'observe'\?\); deadline\(\) takes defaultMs, /,
    ],
    // Misspellings: case, a missing unit, one letter off.
    ['defaultMS', { defaultMS: 500 }, /^unknown option "defaultMS" \(did you mean defaultMs\?\)/],
    ['reserve', { reserve: 10 }, /^unknown option "reserve" \(did you mean reserveMs\?\)/],
    [
      'onExpired',
      { onExpired: () => {} },
      /^unknown option "onExpired" \(did you mean onExpire\?\)/,
    ],
    ['timeout', { timeout: 500 }, /^unknown option "timeout" \(did you mean defaultMs\?\)/],
    // Naming the headers to believe: the option is `trust` (too far from
    // these for a spelling guess, so before the error named nothing).
    [
      'trustHeader',
      { trustHeader: false },
      /^unknown option "trustHeader" \(did you mean trust\?\)/,
    ],
    [
      'trustHeaders',
      { trustHeaders: [] },
      /^unknown option "trustHeaders" \(did you mean trust\?\)/,
    ],
    ['headers', { headers: [] }, /^unknown option "headers" \(did you mean trust\?\)/],
    // Nothing close: the key, and every option there is.
    [
      'retries',
      { retries: 3 },
      /^unknown option "retries"; deadline\(\) takes defaultMs, maxMs, reserveMs, trust, strict, mode, plan, clock, onExpire, onInvalidHeader, onLateWrite, respond$/,
    ],
    // A name every object inherits is still no option.
    ['constructor', { constructor: 1 }, /^unknown option "constructor"; deadline\(\) takes /],
    // Every unknown key at once, even one set to undefined: it is still not what was meant.
    [
      'maxMS and observe',
      { maxMS: 100, observe: undefined },
      /^unknown options "maxMS" \(did you mean maxMs\?\), "observe" \(did you mean mode: 'observe'\?\);/,
    ],
  ])(
    'refuses the unknown key %s, naming it and the option probably meant',
    (_key, options, message) => {
      // Before: ignored, the middleware ran on the defaults its author believed changed.
      expect(() => deadline(options as DeadlineMiddlewareOptions)).toThrow(TypeError)
      expect(() => deadline(options as DeadlineMiddlewareOptions)).toThrow(message)
    },
  )

  it.each([
    [500, /^deadline\(\): options must be an object, got 500$/],
    [null, /^deadline\(\): options must be an object, got null$/],
    ['observe', /^deadline\(\): options must be an object, got 'observe' \(a string\)$/],
  ])(
    'refuses %j instead of options: the defaults would apply without a word',
    (options, message) => {
      expect(() => deadline(options as DeadlineMiddlewareOptions)).toThrow(TypeError)
      expect(() => deadline(options as DeadlineMiddlewareOptions)).toThrow(message)
    },
  )

  it('accepts every documented option at once', () => {
    const every: Required<DeadlineMiddlewareOptions> = {
      defaultMs: 1000,
      maxMs: 5000,
      reserveMs: 10,
      trust: ['grpc-timeout'],
      strict: true,
      mode: 'observe',
      plan: { work: 1 },
      clock: new ManualClock(),
      onExpire: () => {},
      onInvalidHeader: () => {},
      onLateWrite: () => {},
      respond: () => {},
    }
    expect(typeof deadline(every)).toBe('function')
  })

  it('accepts the documented defaults and reserveMs: 0', () => {
    expect(typeof deadline()).toBe('function')
    expect(typeof deadline({ reserveMs: 0, trust: [], mode: 'observe' })).toBe('function')
    expect(typeof deadline({ defaultMs: 20, maxMs: 50, reserveMs: 19 })).toBe('function')
    // A budget at the default reserve's floor is fine with a reserve of its own.
    expect(typeof deadline({ defaultMs: 10, maxMs: 10, reserveMs: 0 })).toBe('function')
    expect(typeof deadline({ defaultMs: 11 })).toBe('function')
    expect(typeof deadline({ onExpire: undefined, onLateWrite: () => {} })).toBe('function')
  })
})
