import { describe, expect, it } from 'vitest'
import { isGatewayConfigError, parseGatewayConfig } from '../src/index.js'

const provider = { dialect: 'openai', baseURL: 'http://127.0.0.1:1/v1', apiKeys: ['k'] }

/** The problems a config (as JSON text, so `__proto__` stays a key) is refused with. */
function problemsOf(json: string): string[] {
  try {
    parseGatewayConfig(JSON.parse(json), { env: {} })
  } catch (error) {
    if (isGatewayConfigError(error)) return error.problems.map((p) => `${p.field}: ${p.message}`)
    throw error
  }
  return []
}

describe('a provider, model or alias named __proto__', () => {
  it.each([
    [
      'providers',
      `{"providers":{"__proto__":${JSON.stringify(provider)}},"models":{"m":{"fallback":[{"provider":"__proto__","model":"x"}]}}}`,
    ],
    [
      'models',
      `{"providers":{"p":${JSON.stringify(provider)}},"models":{"__proto__":{"fallback":[{"provider":"p","model":"x"}]}}}`,
    ],
    [
      'aliases',
      `{"providers":{"p":${JSON.stringify(provider)}},"models":{"m":{"fallback":[{"provider":"p","model":"x"}]}},"aliases":{"__proto__":"m"}}`,
    ],
  ])(
    'in %s is refused by name (it vanished: "expected at least one entry", or accepted and ignored)',
    (section, json) => {
      expect(problemsOf(json)[0]).toBe(
        `${section}.__proto__: a name JavaScript objects cannot hold: pick another`,
      )
    },
  )
})
