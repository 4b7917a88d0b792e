import {
  ClientClosedError,
  DeadlineExceededError,
  isClientClosed,
  isDeadlineExceeded,
  isHourglassError,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'

describe('typed errors', () => {
  it('carry a stable code, a readable message and a chained cause', () => {
    const cause = new Error('upstream')
    const e = new DeadlineExceededError({
      budgetMs: 2000.4,
      elapsedMs: 2003.6,
      slice: 'model',
      cause,
    })
    expect(e.code).toBe('DEADLINE_EXCEEDED')
    expect(e.name).toBe('DeadlineExceededError')
    expect(e.message).toBe(
      'deadline exceeded in slice "model": 2004 ms elapsed of a 2000 ms budget',
    )
    expect(e.cause).toBe(cause)
    expect(new ClientClosedError().code).toBe('CLIENT_CLOSED')
  })

  it('guards recognise errors from a second installed copy, where instanceof fails', async () => {
    // A query string makes the module loader treat this as a separate copy of the module.
    const copy = (await import(
      // @ts-expect-error -- the query string is for the loader only
      '../src/DeadlineExceededError.ts?second-copy'
    )) as typeof import('../src/DeadlineExceededError.js')
    const foreign = new copy.DeadlineExceededError({ budgetMs: 1, elapsedMs: 1 })
    expect(foreign instanceof DeadlineExceededError).toBe(false)
    expect(isDeadlineExceeded(foreign)).toBe(true)
    expect(isHourglassError(foreign)).toBe(true)
    expect(isClientClosed(foreign)).toBe(false)
  })

  it('guards reject look-alikes without the marker', () => {
    expect(isDeadlineExceeded({ code: 'DEADLINE_EXCEEDED' })).toBe(false)
    expect(isDeadlineExceeded(null)).toBe(false)
    expect(isDeadlineExceeded('DEADLINE_EXCEEDED')).toBe(false)
  })
})
