import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * An app that mounts the gateway behind Express's `compression()` — a common
 * first line of an Express app — got every stream gzipped and held in the
 * middleware's zlib buffer until the answer ended: measured through the
 * official client, five tokens 300 ms apart all arrived at 1290 ms, with
 * the `[DONE]`. `compression()` (its `shouldTransform`) and proxies leave a
 * response alone when its `Cache-Control` says `no-transform` (RFC 9111
 * §5.2.2.6), as every event stream should.
 */
describe('a stream tells intermediaries not to transform it', () => {
  const gateway = oneProviderGateway()
  afterEach(() => gateway.close())

  it('says cache-control no-transform (and no-store), through the official client', async () => {
    const fake = await gateway.one('openai')
    fake.enqueue(reply.text('one two three'))
    const { data, response } = await gateway.harness.client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true })
      .withResponse()
    let text = ''
    for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? ''
    expect(text).toBe('one two three')
    const directives = (response.headers.get('cache-control') ?? '').split(/\s*,\s*/)
    expect(directives).toEqual(expect.arrayContaining(['no-transform', 'no-store', 'no-cache']))
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
  })
})
