import { createConnector, createFetch } from '@hourglass/fetch'
import { Agent } from 'undici'
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

// Beside a dispatcher of the caller's, which connects through its own
// connector, createFetch's connector options were dropped without a word:
// a ProxyAgent's calls never saw the `tls.ca` given, a `lookup` was never
// asked. They are refused, naming where they belong.
describe("createFetch's connector options beside a dispatcher of yours", () => {
  const connectorOnly = {
    tls: { ca: 'PEM' },
    lookup: () => {},
    autoSelectFamily: false,
    autoSelectFamilyAttemptTimeoutMs: 100,
  }
  for (const [name, value] of Object.entries(connectorOnly)) {
    it(`${name} is a TypeError naming it and where to set it`, async () => {
      const dispatcher = new Agent()
      try {
        const made = () => createFetch({ dispatcher, [name]: value })
        expect(made).toThrow(TypeError)
        expect(made).toThrow(
          new RegExp(
            `^${name} must be left out with a dispatcher of yours, which connects through its own connector: set it there \\(new Agent\\(\\{ connect: createConnector\\(\\{ ${name} \\}\\) \\}\\), or undici's own connect options\\), got `,
          ),
        )
      } finally {
        await dispatcher.close()
      }
    })
  }

  it('the phase limits and a null autoSelectFamily (its default) are still taken', async () => {
    const dispatcher = new Agent()
    const fetch = createFetch({
      dispatcher,
      connectTimeoutMs: 500,
      dnsTimeoutMs: 200,
      autoSelectFamily: null as never,
    })
    await fetch.close()
    await dispatcher.close()
  })
})
