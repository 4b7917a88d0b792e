import { describe, expect, it } from 'vitest'
import { lookupError, replaceLookup } from '../../../../test/support/replaceLookup.js'
import { startGateway } from '../../src/index.js'
import { useSilentRedis } from '../support/silentRedis.js'

// The resolver's answers: a name that does not exist, a resolver that is
// down, and a name only this lookup knows (listen(), which looks up through
// `node:dns` itself, does not). Every other name is looked up as usual.
replaceLookup((host) => {
  if (host === 'no-such-host.invalid') return Promise.reject(lookupError('ENOTFOUND', host))
  if (host === 'resolver-down.test' || host === '1.2.3.4.5') {
    return Promise.reject(lookupError('EAI_AGAIN', host))
  }
  if (host === 'known-here.test') return Promise.resolve({ address: '127.0.0.1', family: 4 })
  return undefined
})

const CONFIG = {
  providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
  models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
}

/**
 * A `host` that names nothing (a name the resolver does not know; dotted
 * numbers it does not read as an address, `256.1.1.1`) is the gateway's
 * option error naming it, before Redis is dialled — as an empty one is. It
 * was Node's raw `getaddrinfo ENOTFOUND` from listen(), thrown only after
 * the gateway had connected to Redis and waited for it. What the resolver
 * reads as an address is listened on (`0`, `127.1`), at the address that one
 * lookup found.
 */
describe('startGateway with a host that does not resolve', () => {
  const silentRedis = useSilentRedis()

  /** Starts on `host` with a Redis that counts its connections; what it threw, if it did. */
  async function startOn(host: string) {
    const fake = await silentRedis()
    const error = await startGateway({
      config: { ...CONFIG, redis: { url: fake.url } },
      port: 0,
      host,
      logger: () => {},
      drainOnSignals: false,
    }).then(
      (running) => running.close().then(() => new Error(`started on ${running.url}`)),
      (e: unknown) => e,
    )
    return { error: error as Error & { code?: unknown }, accepted: fake.connections }
  }

  // `1.2.3.4.5` with the resolver down: dotted numbers no resolver reads as an address.
  it.each(['256.1.1.1', '1.2.3.4.5', 'no-such-host.invalid'])(
    '%s: GATEWAY_OPTION_INVALID naming it, no Redis connection made',
    async (host) => {
      const { error, accepted } = await startOn(host)
      expect(error.message).toBe(
        `startGateway: host must be an address or a host name that resolves, got '${host}' (a string)`,
      )
      expect(error.code).toBe('GATEWAY_OPTION_INVALID')
      expect(accepted()).toBe(0)
    },
  )

  it('a resolver that is down: its error, as listen() throws it, at once — no Redis connection made', async () => {
    const { error, accepted } = await startOn('resolver-down.test')
    expect(error.message).toBe('getaddrinfo EAI_AGAIN resolver-down.test')
    expect(error.code).toBe('EAI_AGAIN')
    expect(accepted()).toBe(0)
  })

  // All interfaces and loopback in inet_aton's short forms, which the resolver reads as addresses.
  it.each([
    ['0', '0.0.0.0'],
    ['127.1', '127.0.0.1'],
  ])('%s is listened on, as %s', async (host, address) => {
    const running = await startGateway({
      config: CONFIG,
      port: 0,
      host,
      logger: () => {},
      drainOnSignals: false,
    })
    await running.close()
    expect(running.url).toMatch(new RegExp(`^http://${address.replaceAll('.', '\\.')}:\\d+$`))
  })

  it('the address its one lookup found is listened on: the name is not looked up again', async () => {
    // Known to this lookup only: listen() looking the name up itself fails.
    const running = await startGateway({
      config: CONFIG,
      port: 0,
      host: 'known-here.test',
      logger: () => {},
      drainOnSignals: false,
    })
    await running.close()
    expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
  })

  it('a name that resolves (localhost) is listened on', async () => {
    const running = await startGateway({
      config: CONFIG,
      port: 0,
      host: 'localhost',
      logger: () => {},
      drainOnSignals: false,
    })
    await running.close()
    expect(running.url).toMatch(/^http:\/\/(127\.0\.0\.1|\[::1\]):\d+$/)
  })
})
