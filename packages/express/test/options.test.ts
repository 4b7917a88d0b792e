import { describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'

describe('deadline() options', () => {
  it.each([
    [{ defaultMs: 0 }, /defaultMs must be a finite number of ms > 0/],
    [{ defaultMs: Number.NaN }, /defaultMs/],
    [{ maxMs: -1 }, /maxMs must be a finite number of ms > 0/],
    [{ maxMs: Number.POSITIVE_INFINITY }, /maxMs/],
    [{ reserveMs: -1 }, /reserveMs must be a finite number ≥ 0/],
    [{ mode: 'dark' as 'observe' }, /mode must be 'enforce' or 'observe'/],
    [{ trust: ['x-request-timeout' as 'grpc-timeout'] }, /unknown header "x-request-timeout"/],
    [{ plan: { model: -1 } }, /slice "model" must be a positive share/],
  ])('rejects %j when the middleware is created, not per request', (options, message) => {
    expect(() => deadline(options)).toThrow(message)
  })

  it('accepts the documented defaults and reserveMs: 0', () => {
    expect(typeof deadline()).toBe('function')
    expect(typeof deadline({ reserveMs: 0, trust: [], mode: 'observe' })).toBe('function')
  })
})
