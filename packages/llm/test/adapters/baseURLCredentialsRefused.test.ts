import { expect, it } from 'vitest'
import { anthropic, gemini, openAICompatible } from '../../src/index.js'

// Adapters send with undici.request, which drops a URL's `user:password@`
// without a word: a baseURL with credentials (a proxy's Basic auth) sent
// every request without them — a 401 from the proxy, read as a rejected key,
// and every key of the provider retired — while the password rode along in
// `adapter.baseURL`, which is printed and named (retry budgets, admission).
// The gateway's config refuses such a URL; the adapters took it silently.

const PASSWORD = 'MARK-pw-e4a19c07'

it.each([
  [
    'openAICompatible',
    () =>
      openAICompatible({
        baseURL: `https://team:${PASSWORD}@proxy.example/v1`,
        apiKey: 'sk-test-0000',
        model: 'm',
      }),
  ],
  [
    'anthropic',
    () =>
      anthropic({
        baseURL: `https://team:${PASSWORD}@proxy.example`,
        apiKey: 'sk-test-0000',
        model: 'm',
      }),
  ],
  [
    'gemini',
    () =>
      gemini({
        baseURL: `https://:${PASSWORD}@proxy.example/v1beta`,
        apiKey: 'sk-test-0000',
        model: 'm',
      }),
  ],
  [
    'a user alone',
    () =>
      openAICompatible({
        baseURL: 'https://team@proxy.example/v1',
        apiKey: 'sk-test-0000',
        model: 'm',
      }),
  ],
])('%s: a baseURL with a user or password is refused, the value not shown', (_name, make) => {
  let error: unknown
  try {
    make()
  } catch (thrown) {
    error = thrown
  }
  expect(error).toBeInstanceOf(TypeError)
  const message = (error as Error).message
  expect(message).toMatch(/baseURL must .*no user or password/)
  expect(message).toContain('apiKey or headers')
  expect(message).not.toContain(PASSWORD)
  expect(message).not.toContain('team')
})

it('an @ in the path is no credential: accepted', () => {
  const adapter = openAICompatible({
    baseURL: 'https://proxy.example/tenants/@acme/v1',
    apiKey: 'sk-test-0000',
    model: 'm',
  })
  expect(adapter.baseURL).toBe('https://proxy.example/tenants/@acme/v1')
})
