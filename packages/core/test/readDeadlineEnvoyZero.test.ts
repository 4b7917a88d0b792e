import { describe, expect, it } from 'vitest'
import { readDeadline } from '../src/index.js'

// Envoy treats a timeout of 0 as no timeout at all: its router never sends
// `x-envoy-expected-rq-timeout-ms: 0` (out of time, it sends 1), and an
// Envoy that respects the header takes 0 as "infinite". Read as "0 ms
// left", a caller speaking Envoy's convention got a 504 on arrival.

describe('x-envoy-expected-rq-timeout-ms: 0', () => {
  it('is no deadline (Envoy: no timeout), neither 0 ms nor a malformed value; another header still counts', () => {
    expect(readDeadline({ 'x-envoy-expected-rq-timeout-ms': '0' })).toEqual({
      ms: undefined,
      source: undefined,
      clamped: false,
      invalid: [],
    })
    expect(
      readDeadline({ 'x-envoy-expected-rq-timeout-ms': '0', 'x-deadline-remaining-ms': '800' }),
    ).toMatchObject({ ms: 800, source: 'x-deadline-remaining-ms', invalid: [] })
  })

  it('0 in Hourglass\'s own header is still "no time left"', () => {
    expect(readDeadline({ 'x-deadline-remaining-ms': '0' })).toMatchObject({
      ms: 0,
      source: 'x-deadline-remaining-ms',
    })
    expect(readDeadline({ 'x-envoy-expected-rq-timeout-ms': '1' })).toMatchObject({ ms: 1 })
  })
})
