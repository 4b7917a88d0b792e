import { DEFAULT_INGRESS_MAX_MS, resolveIngressOptions } from '@hourglass/core'
import { expect, it } from 'vitest'

// Express's deadline() and gRPC's server interceptor both resolve their
// options here. `{ defaultMs: 60_000 }` (a model route's budget) was cut to
// the default cap of 30 s without a word; with no `maxMs` given the cap now
// follows a larger `defaultMs` up, and a `maxMs` given still cuts it.

it('a defaultMs above the default cap, with no maxMs, is kept, and becomes the cap', () => {
  const resolved = resolveIngressOptions({ defaultMs: 60_000 })
  expect(resolved.defaultMs).toBe(60_000)
  expect(resolved.maxMs).toBe(60_000)
})

it('a maxMs given still cuts defaultMs; a small defaultMs leaves the default cap', () => {
  expect(resolveIngressOptions({ defaultMs: 60_000, maxMs: 45_000 }).defaultMs).toBe(45_000)
  expect(resolveIngressOptions({ defaultMs: 5000 }).maxMs).toBe(DEFAULT_INGRESS_MAX_MS)
  expect(resolveIngressOptions({}).maxMs).toBe(DEFAULT_INGRESS_MAX_MS)
})
