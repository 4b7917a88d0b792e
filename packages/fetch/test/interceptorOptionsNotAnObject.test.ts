import { expect, it } from 'vitest'
import { deadlineInterceptor } from '../src/index.js'

// Options that are no object are refused, as createFetch refuses them, and
// the message names the interceptor: "options must be an object, got null"
// named nothing, from a compose() far from the mistake.

it.each([[null], [500], ['fast'], [[]]] as unknown[][])(
  'deadlineInterceptor(%o) is a TypeError that names it',
  (options) => {
    expect(() => deadlineInterceptor(options as never)).toThrow(TypeError)
    expect(() => deadlineInterceptor(options as never)).toThrow(
      /^deadlineInterceptor\(\): options must be an object, got /,
    )
  },
)

it('the exact message, and options omitted still read as none', () => {
  expect(() => deadlineInterceptor(null as never)).toThrow(
    'deadlineInterceptor(): options must be an object, got null',
  )
  expect(typeof deadlineInterceptor()).toBe('function')
})
