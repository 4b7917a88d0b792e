import { describe, expect, it } from 'vitest'
import { createGateway, isGatewayConfigError, parseGatewayConfig } from '../src/index.js'
import { configProblems as problems } from './support/configProblems.js'

const config = () => ({
  providers: {
    p: { dialect: 'openai', baseURL: 'https://api.openai.com/v1', apiKeys: [{ env: 'K' }] },
  },
  models: { m: { fallback: [{ provider: 'p', model: 'gpt-4o' }] } },
})

describe('an environment variable whose value is an unexpanded reference ($NAME)', () => {
  it('is refused where the config is read, naming the variable, never the rest of the value', () => {
    // `OPENAI_KEY=${OPENAI_KEY_PROD}` in a file `docker run --env-file` reads: not expanded.
    // Accepted before by parseGatewayConfig / loadGatewayConfig, then refused by createGateway.
    expect(problems(config(), { K: `\${OPENAI_KEY_PROD:-sk-secret}` })).toEqual([
      'providers.p.apiKeys[0]: environment variable K holds $' +
        '{OPENAI_KEY_PROD}, which nothing expanded (it would be sent as written: an env file read by `docker run --env-file` or systemd is not expanded); set it to the value itself',
    ])
  })

  it('every config parseGatewayConfig accepts, createGateway accepts as loaded', async () => {
    for (const value of ['$ABC', `sk-\${x}`, 'sk-plain-1234']) {
      const env = { K: value }
      let valid: ReturnType<typeof parseGatewayConfig> | undefined
      try {
        valid = parseGatewayConfig(config(), { env })
      } catch (error) {
        if (!isGatewayConfigError(error)) throw error
        continue // refused at load: consistent
      }
      const gateway = createGateway(valid, { env, logger: () => {} })
      await gateway.close()
    }
  })
})
