import { resolveIngressOptions } from '@hourglass/core'
import { expect, it } from 'vitest'

// `null` is "the default" for every ingress option (a config file's
// `"maxMs": null`, an options object built with `?? null`): `reserveMs`
// alone threw "reserveMs must be a finite number ≥ 0, got null", where
// `maxMs`, `defaultMs`, `trust`, `mode` and `strict` took their defaults.
it('null is the default for every ingress option, reserveMs too', () => {
  const nulls = {
    defaultMs: null,
    maxMs: null,
    reserveMs: null,
    trust: null,
    strict: null,
    mode: null,
    clock: null,
  } as unknown as Parameters<typeof resolveIngressOptions>[0]
  expect(resolveIngressOptions(nulls)).toEqual(resolveIngressOptions({}))
  expect(resolveIngressOptions(nulls).reserveMs).toBeUndefined()
})

it('a reserveMs given is still checked', () => {
  expect(() => resolveIngressOptions({ reserveMs: -1 })).toThrow(
    /reserveMs must be a finite number ≥ 0/,
  )
  expect(resolveIngressOptions({ reserveMs: 0 }).reserveMs).toBe(0)
})
