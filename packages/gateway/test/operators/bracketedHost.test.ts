import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { startGateway } from '../../src/index.js'
import { useSilentRedis } from '../support/silentRedis.js'

/**
 * `host: '[::1]'`, an IPv6 address written as in a URL (as the `url`
 * `startGateway` hands back writes it): the address in the brackets is the
 * one meant, and is listened on. Before, Node took `[::1]` for a host name
 * and `startGateway` failed with its raw `getaddrinfo ENOTFOUND [::1]` —
 * after Redis had been dialled. Brackets around anything else are an option
 * error naming the host, before anything is opened.
 */
describe('startGateway with a bracketed IPv6 host', () => {
  const silentRedis = useSilentRedis()

  const config = (extra: Record<string, unknown> = {}) => ({
    providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
    models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
    ...extra,
  })

  it("'[::1]' listens on ::1, its url the one a client dials", async () => {
    const running = await startGateway({
      config: config(),
      port: 0,
      host: '[::1]',
      logger: () => {},
      drainOnSignals: false,
    })
    try {
      expect(running.url).toMatch(/^http:\/\/\[::1\]:\d+$/)
      const res = await request(`${running.url}/healthz`)
      expect(res.statusCode).toBe(200)
      await res.body.dump()
    } finally {
      await running.close()
    }
  })

  it('brackets around no IPv6 address: GATEWAY_OPTION_INVALID naming the host, no Redis connection made', async () => {
    const fake = await silentRedis()
    for (const host of ['[127.0.0.1]', '[localhost]', '[::1', '::1]', '[]', '[[::1]]']) {
      const error = await startGateway({
        config: config({ redis: { url: fake.url } }),
        port: 0,
        host,
        logger: () => {},
        drainOnSignals: false,
      }).catch((e: unknown) => e)
      expect((error as Error).message, host).toMatch(
        /^startGateway: host must be an address or a host name \(an IPv6 address may be in brackets, as in a URL: \[::1\]\), got /,
      )
      expect((error as Error).message, host).toContain(`got '${host}' (a string)`)
      expect((error as { code?: unknown }).code).toBe('GATEWAY_OPTION_INVALID')
    }
    expect(fake.connections()).toBe(0)
  })
})
