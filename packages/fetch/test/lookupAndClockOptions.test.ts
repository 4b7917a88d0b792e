import { describe, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'

// `lookup` and `clock` are checked when the factory is called, like every
// other option. Unchecked, a lookup that is not a function (a module, a
// name, a config value) failed every call as DNS_FAILED — "the name does not
// resolve", never retried: an outage that is a typo — and a clock without
// its methods failed every call with a bare TypeError from inside undici's
// dispatch. No test here measures time.

const factories = { createFetch, deadlineInterceptor, createConnector }

describe('lookup and clock are validated by every factory', () => {
  for (const [name, factory] of Object.entries(factories)) {
    it(`${name}: a lookup that is not a function is a TypeError naming it`, () => {
      for (const lookup of ['dns', {}, null, 42]) {
        expect(() => factory({ lookup } as never), String(lookup)).toThrow(TypeError)
        expect(() => factory({ lookup } as never), String(lookup)).toThrow('lookup')
      }
    })

    it(`${name}: a clock without now, setTimeout and clearTimeout is a TypeError naming it`, () => {
      for (const clock of [{}, Date, null, 'system', { now: () => 0 }]) {
        expect(() => factory({ clock } as never), String(clock)).toThrow(TypeError)
        expect(() => factory({ clock } as never), String(clock)).toThrow('clock')
      }
    })
  }

  it('accepts a lookup function and a Clock', () => {
    const lookup = () => {}
    const clock = { now: () => 0, setTimeout: () => 0, clearTimeout: () => {} }
    const fetch = createFetch({ lookup, clock })
    expect(typeof fetch).toBe('function')
    return fetch.close()
  })
})
