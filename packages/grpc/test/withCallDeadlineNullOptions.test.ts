import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'
import { withCallDeadline } from '../src/index.js'

// grpc-js takes `null` for a call's options; withCallDeadline threw reading
// `null.interceptors`.
it('withCallDeadline takes null options as none', () => {
  const deadline = Deadline.after(1000, { clock: new ManualClock() })
  expect(() => withCallDeadline(deadline, null)).not.toThrow()
  expect(withCallDeadline(deadline, null)).toEqual(withCallDeadline(deadline, {}))
  deadline.dispose()
})
