import type { FakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * `GET /v1/models` and `GET /v1/models/{id}` are API answers: counted in
 * `/metrics` (an unknown id as `errors_total{kind="model_not_found"}`) and
 * answered with their `x-request-id`. They had no `request` log line, so a
 * client quoting that id — or an operator chasing that error in the
 * metrics — found nothing in the logs, where a 405 or a bad
 * percent-encoding on the same paths had theirs.
 */
describe('GET /v1/models and /v1/models/{id}', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  it('each has its request line: id, path, status, and the error code of a 404', async () => {
    const provider = await fakeProvider('openai', ['sk-models-logged-0001'])
    fake = provider.fake
    harness = await startHarness({
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'x']) },
      aliases: { 'gpt-4o': 'm' },
    })
    const get = async (path: string, id: string) => {
      const res = await fetch(`${harness!.url}${path}`, { headers: { 'x-request-id': id } })
      await res.arrayBuffer()
      expect(res.headers.get('x-request-id')).toBe(id)
      return res.status
    }
    expect(await get('/v1/models', 'rid-list')).toBe(200)
    expect(await get('/v1/models/gpt-4o', 'rid-alias')).toBe(200)
    expect(await get('/v1/models/nope', 'rid-unknown')).toBe(404)

    const lines = harness.logs.filter((l) => l.event === 'request')
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'info',
        requestId: 'rid-list',
        path: '/v1/models',
        status: 200,
      }),
      expect.objectContaining({
        level: 'info',
        requestId: 'rid-alias',
        path: '/v1/models/gpt-4o',
        status: 200,
      }),
      expect.objectContaining({
        level: 'info',
        requestId: 'rid-unknown',
        path: '/v1/models/nope',
        status: 404,
        error: 'model_not_found',
      }),
    ])
    expect(lines[0]?.['error']).toBeUndefined()
    expect(lines[1]?.['error']).toBeUndefined()

    // What the lines say, the metrics count: three requests, one error.
    const page = await fetch(`${harness.url}/metrics`).then((r) => r.text())
    expect(page).toContain('hourglass_gateway_requests_total{status_class="2xx"} 2')
    expect(page).toContain('hourglass_gateway_requests_total{status_class="4xx"} 1')
    expect(page).toContain('hourglass_gateway_errors_total{kind="model_not_found"} 1')
  })
})
