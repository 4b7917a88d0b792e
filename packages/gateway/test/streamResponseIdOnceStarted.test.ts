import { openAIErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

// A stream's `chatcmpl-…` id is minted before the call, for its chunks; the
// request line's `responseId` is the id the client was given. A stream that
// failed before its first event was answered with an HTTP error and no id:
// an operator who counts or searches answers by `responseId` must not find one.
describe('a stream that failed before its first event logs no responseId', () => {
  const gw = oneProviderGateway()
  afterEach(() => gw.close())

  it('a 4xx before the first token: no responseId; a started stream: the id of its chunks', async () => {
    const fake = await gw.one('openai')
    fake.enqueue(openAIErrors.authentication(), reply.text('hello'))
    const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], stream: true }
    const failed = await fetch(`${gw.harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ask),
    })
    const body = await failed.text()
    expect(failed.status).toBe(502)
    expect(body).not.toContain('chatcmpl-')
    const lines = () => gw.harness.logs.filter((l) => l.event === 'request')
    await expect.poll(() => lines().length).toBe(1)
    expect(lines()[0]).toMatchObject({ status: 502, stream: true, error: 'upstream_auth_failed' })
    expect(lines()[0]).not.toHaveProperty('responseId')

    // The keys are retired after the auth failure: a fresh gateway answers the stream.
    await gw.close()
    const again = await gw.one('openai')
    again.enqueue(reply.text('hello'))
    const stream = await gw.harness.client.chat.completions.create({ ...ask, stream: true })
    const ids = new Set<string>()
    for await (const chunk of stream) ids.add(chunk.id)
    await expect.poll(() => lines().length).toBe(1)
    expect(ids.size).toBe(1)
    expect(lines()[0]).toMatchObject({ status: 200, responseId: [...ids][0] })
  })
})
