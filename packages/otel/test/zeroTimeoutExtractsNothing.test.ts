import { DEADLINE_CONTEXT_KEY, DeadlinePropagator } from '@hourglass/otel'
import { ROOT_CONTEXT } from '@opentelemetry/api'
import { describe, expect, it } from 'vitest'

const getter = { get: (c: Record<string, string>, k: string) => c[k], keys: Object.keys }

describe("an Envoy or Stainless timeout of 0 is no deadline to extract, as in core's readDeadline", () => {
  it('x-envoy-expected-rq-timeout-ms: 0 extracts nothing; beside x-deadline-remaining-ms, that one counts', () => {
    const p = new DeadlinePropagator()
    expect(p.extract(ROOT_CONTEXT, { 'x-envoy-expected-rq-timeout-ms': '0' }, getter)).toBe(
      ROOT_CONTEXT,
    )
    const both = p.extract(
      ROOT_CONTEXT,
      { 'x-envoy-expected-rq-timeout-ms': '0', 'x-deadline-remaining-ms': '400' },
      getter,
    )
    expect(both.getValue(DEADLINE_CONTEXT_KEY)).toMatchObject({
      budgetMs: 400,
      source: 'x-deadline-remaining-ms',
    })
  })

  it('x-stainless-timeout is read only when listed in sources: seconds (a whole N, as the SDKs truncate, up to N + 1 s), and 0 extracts nothing', () => {
    const p = new DeadlinePropagator({ sources: ['x-stainless-timeout'] })
    expect(p.extract(ROOT_CONTEXT, { 'x-stainless-timeout': '0' }, getter)).toBe(ROOT_CONTEXT)
    expect(
      p
        .extract(ROOT_CONTEXT, { 'x-stainless-timeout': '2' }, getter)
        .getValue(DEADLINE_CONTEXT_KEY),
    ).toMatchObject({ budgetMs: 2999, source: 'x-stainless-timeout' })
    expect(
      p
        .extract(ROOT_CONTEXT, { 'x-stainless-timeout': '2.5' }, getter)
        .getValue(DEADLINE_CONTEXT_KEY),
    ).toMatchObject({ budgetMs: 2500, source: 'x-stainless-timeout' })
    expect(
      new DeadlinePropagator().extract(ROOT_CONTEXT, { 'x-stainless-timeout': '2' }, getter),
    ).toBe(ROOT_CONTEXT)
  })
})
