import {
  DEFAULT_INGRESS_MAX_MS,
  type DeadlineSource,
  readDeadline,
  resolveIngressOptions,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * readDeadline's options checked as an ingress's are: `maxMs: null` is no
 * cap given (it was floored to 0: every request expired on arrival), and a
 * `sources` name it does not know is refused (it trusted nothing, without a
 * word: every inbound deadline ignored).
 */
describe('readDeadline option checks', () => {
  const headers = { 'x-deadline-remaining-ms': '5000' }

  it('reads maxMs: null as no cap given (the default cap), and minMs: null as none', () => {
    expect(readDeadline(headers, { maxMs: null as unknown as number })).toMatchObject({
      ms: 5000,
      clamped: false,
    })
    expect(
      readDeadline(
        { 'x-deadline-remaining-ms': String(DEFAULT_INGRESS_MAX_MS + 1) },
        { maxMs: null as unknown as number },
      ),
    ).toMatchObject({ ms: DEFAULT_INGRESS_MAX_MS, clamped: true })
    expect(readDeadline(headers, { minMs: null as unknown as number }).ms).toBe(5000)
  })

  it('refuses a source it does not know, naming it and the known ones', () => {
    const read = () =>
      readDeadline({ 'grpc-timeout': '1S' }, { sources: ['grpc_timeout' as DeadlineSource] })
    expect(read).toThrow(RangeError)
    expect(read).toThrow(
      'readDeadline: sources lists an unknown header "grpc_timeout" (known: x-deadline-remaining-ms, grpc-timeout, x-envoy-expected-rq-timeout-ms, x-stainless-timeout)',
    )
    expect(() => readDeadline(headers, { sources: [5 as unknown as DeadlineSource] })).toThrow(
      /unknown header 5 \(known: /,
    )
  })

  it('takes a known source in any letter case, as header names are', () => {
    expect(
      readDeadline(headers, { sources: ['X-Deadline-Remaining-Ms' as DeadlineSource] }),
    ).toMatchObject({ ms: 5000, source: 'x-deadline-remaining-ms' })
    expect(
      readDeadline(
        { 'grpc-timeout': '1S', 'x-deadline-remaining-ms': '5000' },
        { sources: ['x-deadline-remaining-ms', 'GRPC-TIMEOUT' as DeadlineSource] },
      ),
    ).toMatchObject({ ms: 1000, source: 'grpc-timeout' })
  })
  it('an ingress’s trust reads the same list the same way (it refused a capitalised name readDeadline took)', () => {
    expect(
      resolveIngressOptions({
        trust: ['X-Deadline-Remaining-Ms' as DeadlineSource, 'grpc-timeout'],
      }).trust,
    ).toEqual(['x-deadline-remaining-ms', 'grpc-timeout'])
    expect(() => resolveIngressOptions({ trust: ['grpc_timeout' as DeadlineSource] })).toThrow(
      'trust lists an unknown header "grpc_timeout" (known: ',
    )
  })
})
