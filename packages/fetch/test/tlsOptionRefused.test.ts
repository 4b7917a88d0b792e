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
// connector, createFetch's `tls` and `lookup` were dropped without a word: a
// ProxyAgent's calls never saw the `tls.ca` given, a `lookup` was never
// asked. They are refused, naming where they belong — unless a
// createConnector of the caller's took the very same value (one options
// object spread into both, the README's setup: in force there).
describe("createFetch's connector options beside a dispatcher of yours", () => {
  const connectorOnly = { tls: { ca: 'PEM' }, lookup: () => {} }
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

  it("one options object spread into the dispatcher's createConnector and into createFetch is taken", async () => {
    const opts = { tls: { ca: 'PEM' }, lookup: () => {}, headersTimeoutMs: 2000 }
    const dispatcher = new Agent({ connect: createConnector(opts) })
    try {
      const fetch = createFetch({ ...opts, dispatcher })
      await fetch.close()
      // A copy of the tls object is not the one the connector took.
      expect(() => createFetch({ ...opts, tls: { ...opts.tls }, dispatcher })).toThrow(
        /^tls must be left out with a dispatcher of yours/,
      )
    } finally {
      await dispatcher.close()
    }
  })

  it('the phase limits and autoSelectFamily* are still taken (the connector keeps its own)', async () => {
    const dispatcher = new Agent()
    const fetch = createFetch({
      dispatcher,
      connectTimeoutMs: 500,
      dnsTimeoutMs: 200,
      autoSelectFamily: false,
      autoSelectFamilyAttemptTimeoutMs: 100,
    })
    await fetch.close()
    await dispatcher.close()
  })
})
