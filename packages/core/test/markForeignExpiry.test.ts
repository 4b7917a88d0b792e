import { describe, expect, it } from 'vitest'
import {
  Deadline,
  DeadlineExceededError,
  isExpiryOf,
  ManualClock,
  markExpiryOf,
  markForeignExpiry,
} from '../src/index.js'

// Which deadline an expiry error reports decides how an ingress answers it:
// its own request's expiry (504 `x-deadline-expired`), or an error of the
// app's to pass on. One sentinel in core stands for "some deadline outside
// the caller's line" (a remote's cap, a job's), for every package.
describe('isExpiryOf and the errors marked for a deadline', () => {
  const clock = new ManualClock()
  const error = () => new DeadlineExceededError({ budgetMs: 100, elapsedMs: 100 })

  it('an error of no known deadline counts as any deadline line’s own', () => {
    const request = Deadline.after(1000, { clock })
    expect(isExpiryOf(error(), request)).toBe(true)
    request.dispose()
  })

  it('an error marked foreign is no deadline’s own: not the request’s, not a child’s, not a parent’s', () => {
    const request = Deadline.after(1000, { clock })
    const slice = request.child(200)
    const foreign = markForeignExpiry(error())
    expect(isExpiryOf(foreign, request)).toBe(false)
    expect(isExpiryOf(foreign, slice)).toBe(false)
    slice.dispose()
    request.dispose()
  })

  it('marked for the request, it is the request’s and its slices’; a later foreign mark replaces it', () => {
    const request = Deadline.after(1000, { clock })
    const slice = request.child(200)
    const own = markExpiryOf(error(), request)
    expect(isExpiryOf(own, request)).toBe(true)
    expect(isExpiryOf(own, slice)).toBe(true)
    expect(isExpiryOf(markForeignExpiry(own), request)).toBe(false)
    slice.dispose()
    request.dispose()
  })

  it('leaves what is no object alone and returns what it was given', () => {
    expect(markForeignExpiry('late')).toBe('late')
    expect(markForeignExpiry(undefined)).toBeUndefined()
    const e = error()
    expect(markForeignExpiry(e)).toBe(e)
  })
})
