import { resolveIngressOptions } from '@hourglass/core'
import { expect, it } from 'vitest'

// `mode` is refused as every other ingress option is (optionError): the
// value shown by describeValue, never by `String`, which threw for an object
// without a prototype and showed an object whose toString() says 'observe'
// as if the string had been given.

it('a mode that is not one of the two strings is refused naming the value, whatever it is', () => {
  const mode = (value: unknown) => () =>
    resolveIngressOptions({ mode: value as 'observe' | 'enforce' })
  expect(mode(Object.create(null))).toThrow(
    new TypeError("mode must be 'enforce' or 'observe', got an object"),
  )
  expect(mode({ toString: () => 'observe' })).toThrow(
    new TypeError("mode must be 'enforce' or 'observe', got an object"),
  )
  expect(mode('Observe')).toThrow(
    new TypeError("mode must be 'enforce' or 'observe', got 'Observe' (a string)"),
  )
  expect(mode(Symbol('observe'))).toThrow(
    /mode must be 'enforce' or 'observe', got Symbol\(observe\)/,
  )
  expect(mode(true)).toThrow(new TypeError("mode must be 'enforce' or 'observe', got true"))
})

it('the two modes, and none, are taken', () => {
  expect(resolveIngressOptions({ mode: 'observe' }).observe).toBe(true)
  expect(resolveIngressOptions({ mode: 'enforce' }).observe).toBe(false)
  expect(resolveIngressOptions({}).observe).toBe(false)
})

it('an ingress label prefixes the refusal of a mode too', () => {
  const label = {
    name: 'deadlineServerInterceptor',
    refusal: 'DEADLINE_EXCEEDED',
    every: 'every call',
    everyWithoutDeadline: 'every call without a deadline',
  }
  expect(() => resolveIngressOptions({ mode: 'dark' as 'observe' }, label)).toThrow(
    "deadlineServerInterceptor: mode must be 'enforce' or 'observe', got 'dark' (a string)",
  )
})
