import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { fallback } from './support/harness.js'
import { openAIGateway } from './support/openAIGateway.js'

/**
 * Under `startGateway` a path the gateway does not serve was a 404 whose
 * whole message was `not found`: a client calling an endpoint the gateway
 * has none of (`client.embeddings.create`, the Responses API) could not
 * tell a missing route from a missing model, and one whose `baseURL` left
 * out `/v1` — the commonest mistake when switching a client over — was told
 * nothing of it. The 404 names the method and path (escaped, cut, as other
 * client text in messages), what the gateway serves, and for a gateway path
 * without its `/v1`, the `baseURL` to set.
 */
describe('the 404 for a path the gateway does not serve', () => {
  const gateway = openAIGateway({
    models: { m: fallback(['p', 'gpt-4o']), 'openai/gpt-4o': fallback(['p', 'gpt-4o']) },
  })

  const served =
    'this gateway serves POST /v1/chat/completions, GET /v1/models and GET /v1/models/{id}'

  it('an endpoint it has none of: named, with what it serves', async () => {
    const error = await gateway.harness.client.embeddings
      .create({ model: 'm', input: 'x' })
      .catch((e) => e)
    expect(error).toBeInstanceOf(OpenAI.NotFoundError)
    expect(error.error).toEqual({
      message: `no route for POST "/v1/embeddings": ${served}`,
      type: 'invalid_request_error',
      param: null,
      code: 'not_found',
    })
    const responses = await gateway.harness.client.responses
      .create({ model: 'm', input: 'x' })
      .catch((e) => e)
    expect(responses.status).toBe(404)
    expect(responses.error.message).toBe(`no route for POST "/v1/responses": ${served}`)
  })

  it('a baseURL without /v1: told to end it in /v1', async () => {
    const client = new OpenAI({ baseURL: gateway.harness.url, apiKey: 'x', maxRetries: 0 })
    const error = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e)
    expect(error.status).toBe(404)
    expect(error.error.message).toBe(
      `no route for POST "/chat/completions": ${served}; the client's baseURL must end in /v1`,
    )
    const list = await client.models.list().catch((e) => e)
    expect(list.status).toBe(404)
    expect(list.error.message).toMatch(/baseURL must end in \/v1$/)
    expect(gateway.fake.requests).toHaveLength(0)
  })

  // The official client sends `models.retrieve('openai/gpt-4o')` as
  // `/v1/models/openai%2Fgpt-4o`, which is served; the same id written
  // unescaped (curl, a hand-built URL) is two segments, and the 404 said
  // model retrieval was not served at all.
  it('a model id with a / asked unescaped: told to send it as %2F', async () => {
    expect((await gateway.harness.client.models.retrieve('openai/gpt-4o')).id).toBe('openai/gpt-4o')
    const res = await fetch(`${gateway.harness.url}/v1/models/openai/gpt-4o`)
    expect(res.status).toBe(404)
    const { error } = (await res.json()) as { error: { message: string; code: string } }
    expect(error.code).toBe('not_found')
    expect(error.message).toBe(
      `no route for GET "/v1/models/openai/gpt-4o": ${served}; a / in a model id is sent as %2F`,
    )
    const bare = await fetch(`${gateway.harness.url}/models/openai/gpt-4o`)
    expect(((await bare.json()) as { error: { message: string } }).error.message).toBe(
      `no route for GET "/models/openai/gpt-4o": ${served}; the client's baseURL must end in /v1; a / in a model id is sent as %2F`,
    )
    // Only a retrieval is told to escape: no other method is served there.
    const post = await fetch(`${gateway.harness.url}/v1/models/openai/gpt-4o`, { method: 'POST' })
    expect(((await post.json()) as { error: { message: string } }).error.message).toBe(
      `no route for POST "/v1/models/openai/gpt-4o": ${served}`,
    )
  })

  it('a hostile path is escaped and cut, not echoed whole', async () => {
    const res = await fetch(`${gateway.harness.url}/v1/${'%E2%80%AE'.repeat(3)}${'x'.repeat(5000)}`)
    expect(res.status).toBe(404)
    const { error } = (await res.json()) as { error: { message: string } }
    expect(error.message.length).toBeLessThan(250)
    expect(error.message).toMatch(/^no route for GET "\/v1\/%E2%80%AE%E2%80%AE%E2%80%AExxx+…": /)
  })
})
