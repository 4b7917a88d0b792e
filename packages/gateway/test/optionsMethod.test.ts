import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

// OPTIONS on a gateway path went to Express's automatic answer: 200
// text/plain "POST", counted in the metrics, never logged — unlike every
// other method the path does not serve (405 with Allow, logged).
describe('OPTIONS on a gateway path', () => {
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    harness = undefined
  })

  it('is a 405 with Allow in OpenAI error shape, logged and counted as method_not_allowed', async () => {
    const provider = await fakeProvider('openai', ['k'])
    try {
      harness = await startHarness({
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'gpt']) },
      })
      for (const [path, allow] of [
        ['/v1/chat/completions', 'POST'],
        ['/v1/models', 'GET, HEAD'],
        ['/v1/models/m', 'GET, HEAD'],
        ['/healthz', 'GET, HEAD'],
      ] as const) {
        const res = await fetch(`${harness.url}${path}`, { method: 'OPTIONS' })
        expect(`${path}: ${res.status} allow ${res.headers.get('allow')}`).toBe(
          `${path}: 405 allow ${allow}`,
        )
        expect(res.headers.get('content-type')).toMatch(/^application\/json/)
        expect(await res.json()).toEqual({
          error: {
            message: `OPTIONS is not allowed here (allowed: ${allow})`,
            type: 'invalid_request_error',
            param: null,
            code: 'method_not_allowed',
          },
        })
      }
      const lines = harness.logs.filter((l) => l.event === 'request')
      expect(lines.map((l) => `${l['path']} ${l['status']} ${l['error']}`)).toEqual([
        '/v1/chat/completions 405 method_not_allowed',
        '/v1/models 405 method_not_allowed',
        '/v1/models/m 405 method_not_allowed',
        '/healthz 405 method_not_allowed',
      ])
      const page = await (await fetch(`${harness.url}/metrics`)).text()
      // The three under /v1/ (the probe path is not counted).
      expect(page).toMatch(/hourglass_gateway_errors_total\{kind="method_not_allowed"[^}]*\} 3\b/)
      expect(provider.fake.requests).toHaveLength(0)
    } finally {
      await provider.fake.close()
    }
  })
})
