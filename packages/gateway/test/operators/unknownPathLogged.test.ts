import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * Under `startGateway`, a `/v1/…` path the gateway does not serve is a 404
 * counted in `/metrics` (`errors_total{kind="not_found"}`) and answered
 * with its `x-request-id`, but it had no `request` log line: a client
 * quoting that id found nothing in the logs. Every other API answer (a 405,
 * a drain's 503, a 400) has its line.
 */
describe('an unknown /v1 path under startGateway', () => {
  let harness: Harness | undefined
  let closeFake: (() => Promise<void>) | undefined
  afterEach(async () => {
    await harness?.close()
    await closeFake?.()
    harness = undefined
  })

  it('has its request line: id, path, 404, not_found', async () => {
    const { fake, entry } = await fakeProvider('openai', ['sk-unknown-path-0001'])
    closeFake = () => fake.close()
    harness = await startHarness({ providers: { p: entry }, models: { m: fallback(['p', 'x']) } })
    const res = await fetch(`${harness.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'rid-unknown-path' },
      body: '{}',
    })
    expect(res.status).toBe(404)
    await res.arrayBuffer()
    const other = await fetch(`${harness.url}/not-api`)
    expect(other.status).toBe(404)
    await other.arrayBuffer()
    expect(harness.logs.filter((l) => l.event === 'request')).toEqual([
      expect.objectContaining({
        level: 'info',
        requestId: 'rid-unknown-path',
        path: '/v1/embeddings',
        status: 404,
        error: 'not_found',
      }),
    ])
  })
})
