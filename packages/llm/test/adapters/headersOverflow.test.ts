import { afterEach, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { rawServer } from './support/rawServer.js'

// A provider (or a proxy in front of it) whose answer comes with more header
// bytes than the HTTP client reads (undici's limit, Node's 16 KB): the
// headers of a whole answer come after the whole generation, so each resend
// generated, and billed, it again — and met the same headers. It was a
// retryable network failure, asked three times.

const fakes = useFakes()
const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

const ANSWER = JSON.stringify({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-4o',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
})

it('an answer whose headers overflow the client is not resent to that model', async () => {
  let requests = 0
  const server = await rawServer((req, res) => {
    req.resume()
    req.on('end', () => {
      requests++
      res.writeHead(200, { 'content-type': 'application/json', 'x-trace': 'a'.repeat(100_000) })
      res.end(ANSWER)
    })
  })
  servers.push(server)
  const adapter = fakes.adapter(
    openAICompatible({ baseURL: server.baseURL, apiKey: 'sk-test-0000', model: 'gpt-4o' }),
  )
  const error = await callModel({
    models: [adapter],
    request: { messages: [user('hi')], maxTokens: 20 },
    retry: { maxAttempts: 3, delay: FAST_RETRIES, budgets: false },
    limits: { admission: false },
  }).then(
    () => undefined,
    (thrown: unknown) => thrown,
  )
  expect(isModelUnavailable(error)).toBe(true)
  expect(requests).toBe(1)
  const cause = (error as { causes: Array<{ cause: unknown }> }).causes[0]?.cause
  expect(String((cause as Error).message)).toMatch(/headers were more than the HTTP client reads/)
})
