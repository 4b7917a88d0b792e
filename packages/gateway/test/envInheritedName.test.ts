import { describe, expect, it } from 'vitest'
import { isGatewayConfigError, parseGatewayConfig } from '../src/index.js'

/**
 * `{ "env": NAME }` reads the environment's own variables. A name that is
 * also an Object.prototype member (`toString`, `constructor`, `__proto__`)
 * and is not set must be reported as not set, at its field — before, it read
 * the inherited function and said "expected a non-empty string", naming a
 * wrong value the user never wrote.
 */
describe('{ "env": NAME } with a name Object.prototype also has', () => {
  const config = (name: string) => ({
    providers: { o: { dialect: 'openai', baseURL: 'http://x.test', apiKeys: [{ env: name }] } },
    models: { m: { fallback: [{ provider: 'o', model: 'x' }] } },
  })

  for (const name of ['toString', 'constructor', '__proto__']) {
    it(`${name}: "environment variable ${name} is not set", once`, () => {
      for (const env of [{}, { PATH: '/bin' }]) {
        let problems: unknown
        try {
          parseGatewayConfig(config(name), { env })
        } catch (error) {
          problems = isGatewayConfigError(error) ? error.problems : error
        }
        expect(problems).toEqual([
          { field: 'providers.o.apiKeys[0]', message: `environment variable ${name} is not set` },
        ])
      }
    })
  }

  it('a variable of that name that is set is used', () => {
    const valid = parseGatewayConfig(config('toString'), { env: { toString: 'sk-from-env-0001' } })
    expect(valid.providers['o']?.apiKeys).toEqual(['sk-from-env-0001'])
  })
})
