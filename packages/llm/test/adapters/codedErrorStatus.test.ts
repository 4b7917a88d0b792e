import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterEach, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { rawServer } from './support/rawServer.js'

// An error status whose body does not decode as its Content-Encoding says
// (a proxy's label on a plain body, or an empty body labelled gzip) is still
// classified by its status and headers, as it was before bodies were decoded:
// the decoder's failure made a 429 a `network` error "(HTTP 0)".
const fakes = useFakes()
const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

it.each([
  [
    'a plain body',
    JSON.stringify({
      error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
    }),
  ],
  ['an empty body', ''],
])('a 429 labelled gzip with %s stays a rate limit', async (_, body) => {
  const server = await rawServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(429, {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'retry-after': '0',
      })
      res.end(body)
    })
  })
  servers.push(server)
  const failure = await callModel({
    models: [
      fakes.adapter(
        openAICompatible({ baseURL: server.baseURL, apiKey: 'sk-test-key-123', model: 'm' }),
      ),
    ],
    request: { messages: [user('hi')], maxTokens: 10 },
    limits: { admission: false as const },
    retry: { budgets: false as const, delay: FAST_RETRIES },
  }).then(
    () => undefined,
    (error: unknown) => error,
  )
  const cause = (failure as { cause?: { kind?: string; status?: number } }).cause
  expect(cause?.kind).toBe('rate_limited')
  expect(cause?.status).toBe(429)
})
