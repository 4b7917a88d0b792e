import {
  ClientClosedError,
  Deadline,
  type DeadlineExceededError,
  endedBy,
  ManualClock,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'

function expired(): DeadlineExceededError {
  const clock = new ManualClock()
  const d = Deadline.after(10, { clock, name: 'model' })
  clock.advance(10)
  return d.reason as DeadlineExceededError
}

describe('endedBy', () => {
  it('finds the deadline error itself, or the nearest in the cause chain', () => {
    const e = expired()
    expect(endedBy(e)).toBe(e)
    const gone = new ClientClosedError()
    const abort = Object.assign(new Error('aborted', { cause: gone }), { name: 'AbortError' })
    expect(endedBy(abort)).toBe(gone)
    expect(endedBy(new Error('stream broke', { cause: new Error('inner', { cause: e }) }))).toBe(e)
  })

  it('is undefined for anything else, however the chain is built', () => {
    expect(endedBy(new Error('plain'))).toBeUndefined()
    expect(endedBy(undefined)).toBeUndefined()
    expect(endedBy('DEADLINE_EXCEEDED')).toBeUndefined()
    const loop: { cause?: unknown } = {}
    loop.cause = loop
    expect(endedBy(loop)).toBeUndefined()
    const a: { cause?: unknown } = {}
    const b: { cause?: unknown } = { cause: a }
    a.cause = b
    expect(endedBy(a)).toBeUndefined()
    const hostile = Object.defineProperty({}, 'cause', {
      get() {
        throw new Error('no')
      },
    })
    expect(endedBy(hostile)).toBeUndefined()
    // Deeper than any real wrapping: not searched.
    let deep: unknown = expired()
    for (let i = 0; i < 50; i++) deep = new Error('wrap', { cause: deep })
    expect(endedBy(deep)).toBeUndefined()
  })
})
