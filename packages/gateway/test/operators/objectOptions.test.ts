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
})
