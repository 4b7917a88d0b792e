import {
  ClientClosedError,
  DeadlineExceededError,
  endedBy,
  errorCode,
  hasErrorCode,
  isAbortError,
  isAbortSignal,
  isClientClosed,
  isClock,
  isDeadline,
  isDeadlineExceeded,
  isHourglassError,
  ManualClock,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// The guards run inside error handlers and option checks on whatever they are
// given: one that throws replaced the error being handled (in gRPC's error
// mapper, an uncaught exception that ended the process). Each answers for any
// value, a hostile one too.

function revoked(): object {
  const { proxy, revoke } = Proxy.revocable(new Error('x'), {})
  revoke()
  return proxy
}

/** Every property read throws, the marker symbol's too. */
function throwingReads(): object {
  return new Proxy(new Error('x'), {
    get() {
      throw new Error('no reads')
    },
  })
}

/** An Hourglass error whose `code` reads as a string once, then throws. */
function codeThrowsOnSecondRead(): object {
  const error = new DeadlineExceededError({ budgetMs: 1, elapsedMs: 1 })
  let reads = 0
  return Object.defineProperty(error, 'code', {
    get() {
      reads++
      if (reads > 1) throw new Error('read once')
      return DeadlineExceededError.code
    },
  })
}

const hostile: Record<string, () => unknown> = {
  'a revoked Proxy': revoked,
  'a Proxy whose every read throws': throwingReads,
  'an Error caused by a revoked Proxy': () => new Error('x', { cause: revoked() }),
  'an Error whose code getter throws the second time': codeThrowsOnSecondRead,
}

const guards: Record<string, (value: unknown) => unknown> = {
  isHourglassError,
  hasErrorCode: (value) => hasErrorCode(value, 'DEADLINE_EXCEEDED'),
  isDeadlineExceeded,
  isClientClosed,
  isAbortError,
  isDeadline,
  isAbortSignal,
  isClock,
}

describe('the guards of core are total', () => {
  for (const [kind, make] of Object.entries(hostile)) {
    for (const [name, guard] of Object.entries(guards)) {
      // Its first read of `code` is a string: an Hourglass error, rightly.
      if (name === 'isHourglassError' && make === codeThrowsOnSecondRead) continue
      it(`${name} answers false for ${kind}`, () => {
        expect(guard(make())).toBe(false)
      })
    }
    it(`endedBy answers undefined for ${kind}, and errorCode a code`, () => {
      expect(endedBy(make())).toBeUndefined()
      expect(typeof errorCode(make())).toBe('string')
    })
  }

  it('the real thing still passes each guard', () => {
    // The guards say false only where nothing can be read: the real errors still pass.
    const expired = new DeadlineExceededError({ budgetMs: 1, elapsedMs: 1 })
    expect(isDeadlineExceeded(expired)).toBe(true)
    expect(isClientClosed(new ClientClosedError())).toBe(true)
    expect(endedBy(new Error('wrapper', { cause: expired }))).toBe(expired)
    expect(isClock(new ManualClock())).toBe(true)
    expect(isAbortSignal(new AbortController().signal)).toBe(true)
  })
})
