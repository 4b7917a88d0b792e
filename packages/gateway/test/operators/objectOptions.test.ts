import { createFetch } from '@hourglass/fetch'
import { describe, expect, it } from 'vitest'
import { createGateway } from '../../src/index.js'

/**
 * The options that are objects are checked by shape, like the numeric ones:
 * a TypeError with `code: 'GATEWAY_OPTION_INVALID'` naming the option, thrown
 * before anything is opened. A bad clock used to surface from deep inside
 * (after the gateway's Redis client had started dialling), and a bad logger
 * or env as `logger.child is not a function` / `Invalid value used as weak map key`.
 */
const config = {
  providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
  models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
}

describe('createGateway object options', () => {
  it.each([
    ['clock', {}],
    ['clock', 5],
    ['logger', {}],
    ['logger', 5],
    ['env', 5],
    ['env', null],
    // Every chat completion was a 500 naming nothing.
    ['retryBudgets', 'off'],
    ['retryBudgets', true],
    ['retryBudgets', {}],
  ])('%s = %j is GATEWAY_OPTION_INVALID naming it', (name, value) => {
    const error = (() => {
      try {
        createGateway(config, { logger: () => {}, [name]: value })
      } catch (e) {
        return e
      }
    })()
    expect((error as Error).message).toMatch(new RegExp(`^createGateway: ${name} must be `))
    expect((error as { code?: unknown }).code).toBe('GATEWAY_OPTION_INVALID')
  })

  it.each([
    // A URL (the config's `redis.url` takes one) failed inside llm's
    // cooldown store, with no code; `null` dropped the config's Redis
    // silently; a client without `status` was never sent a command.
    ['redis', 'a URL', 'redis://127.0.0.1:6379'],
    ['redis', 'an empty object', {}],
    ['redis', 'null', null],
    ['redis', 'a client without status', { eval: () => 1, evalsha: () => 1 }],
    // A plain fetch (the global one) was reported as a config problem at
    // `providers.p`, the operator sent to the config file.
    ['fetch', 'the global fetch', globalThis.fetch],
    ['fetch', 'an empty object', {}],
    ['fetch', 'null', null],
  ])('%s = %s is GATEWAY_OPTION_INVALID naming it', (name, _what, value) => {
    const error = (() => {
      try {
        createGateway(config, { logger: () => {}, [name]: value })
      } catch (e) {
        return e
      }
    })()
    expect((error as Error).message).toMatch(new RegExp(`^createGateway: ${name} must be `))
    expect((error as { code?: unknown }).code).toBe('GATEWAY_OPTION_INVALID')
  })

  it('a redis.url in the config is not dropped by a redis option refused', () => {
    // The refusal comes before anything is opened: no client dialling the URL is left behind.
    expect(() =>
      createGateway(
        { ...config, redis: { url: 'redis://127.0.0.1:9' } },
        { logger: () => {}, redis: null as never },
      ),
    ).toThrow(/^createGateway: redis must be /)
  })

  it('an ioredis-shaped client and a createFetch() are taken', async () => {
    const redis = { status: 'ready', eval: async () => 1, evalsha: async () => 1 }
    const fetch = createFetch()
    const gateway = createGateway(config, { logger: () => {}, redis, fetch })
    await gateway.close()
    await fetch.close()
  })
})
