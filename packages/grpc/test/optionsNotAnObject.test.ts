import { expect, it } from 'vitest'
import { deadlineInterceptor, deadlineServerInterceptor } from '../src/index.js'

// Options that are no object are refused, as every factory of the project
// refuses them (`createFetch(null)`, express's `deadline(null)`), and the
// message names which interceptor: "options must be an object" named
// neither, and the server's every other option message starts with its name.

it.each([[null], [500], ['fast'], [[]]] as unknown[][])(
  'deadlineServerInterceptor(%o) is a TypeError that names it',
  (options) => {
    expect(() => deadlineServerInterceptor(options as never)).toThrow(TypeError)
    expect(() => deadlineServerInterceptor(options as never)).toThrow(
      /^deadlineServerInterceptor\(\): options must be an object, got /,
    )
  },
)

it.each([[null], [500], ['fast'], [[]]] as unknown[][])(
  'the client deadlineInterceptor(%o) is a TypeError that names it',
  (options) => {
    expect(() => deadlineInterceptor(options as never)).toThrow(TypeError)
    expect(() => deadlineInterceptor(options as never)).toThrow(
      /^deadlineInterceptor\(\): options must be an object, got /,
    )
  },
)

it('the exact message, and options omitted still read as none', () => {
  expect(() => deadlineServerInterceptor(null as never)).toThrow(
    'deadlineServerInterceptor(): options must be an object, got null',
  )
  expect(() => deadlineInterceptor(null as never)).toThrow(
    'deadlineInterceptor(): options must be an object, got null',
  )
  expect(() => deadlineServerInterceptor()).not.toThrow()
  expect(() => deadlineInterceptor()).not.toThrow()
})
