import { createConnector, createFetch } from '@hourglass/fetch'
import { describe, expect, it } from 'vitest'

// `tls` is spread into node:tls's connect options: a number, a string or
// null spread into nothing, and the caller's CA, client certificate or
// servername was dropped without a word (a `tls: 5` accepted as none).
describe('a tls option that is no object', () => {
  for (const tls of [5, 'ca.pem', null, true]) {
    it(`createConnector and createFetch refuse ${JSON.stringify(tls)}, naming it`, () => {
      expect(() => createConnector({ tls } as never)).toThrow(/^tls must be an object/)
      expect(() => createFetch({ tls } as never)).toThrow(/^tls must be an object/)
    })
  }

  it('an object is taken, and so is none', async () => {
    expect(typeof createConnector({ tls: { servername: 'api.internal' } })).toBe('function')
    expect(typeof createConnector({})).toBe('function')
    const fetch = createFetch({ tls: { rejectUnauthorized: true } })
    await fetch.close()
  })
})
