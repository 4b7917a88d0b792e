import { DEADLINE_HEADER, readDeadline, writeDeadline } from '@hourglass/core'
import { expect, it } from 'vitest'

// Headers as an array — Node's `req.rawHeaders` (names and values in turn),
// undici's flat `string[]` or fetch's pairs — were read as a record whose
// keys are '0', '1', …: no deadline on any request, and nothing said so
// (the ingress fell back to its default budget). `readDeadline(req)` is
// refused for the same silence, and `writeDeadline` refuses an array.

it('refuses headers given as an array with a TypeError that names the form', () => {
  for (const headers of [[DEADLINE_HEADER, '500'], [[DEADLINE_HEADER, '500']], []]) {
    expect(() => readDeadline(headers as never)).toThrow(TypeError)
    expect(() => readDeadline(headers as never)).toThrow(
      /^readDeadline: headers must be an object of headers .*, not an array/,
    )
  }
  expect(() => writeDeadline([] as never, undefined)).toThrow(TypeError)
})

it('still reads a record whose value is an array (a header sent twice)', () => {
  expect(readDeadline({ [DEADLINE_HEADER]: ['500', '600'] }).invalid).toEqual([
    { header: DEADLINE_HEADER, value: '500, 600', reason: 'repeated header' },
  ])
  expect(readDeadline({ [DEADLINE_HEADER]: ['500'] }).ms).toBe(500)
})
