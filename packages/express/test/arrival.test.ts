import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, expressChannels, type IngressExpireMessage } from '../src/index.js'
import { client, listen, majors, type Running, record } from './support/servers.js'

describe.each(majors)('a request that arrives already expired ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function serve(mode: 'enforce' | 'observe') {
    const app = major.app()
    const calls: number[] = []
    const expired: IngressExpireMessage[] = []
    app.use(deadline({ reserveMs: 10, mode, onExpire: (event) => expired.push(event) }))
    app.get('/', (req, res) => {
      calls.push(req.deadline.remaining())
      res.json({ ok: true })
    })
    server = await listen(app)
    return { url: server.url, calls, expired }
  }

  it.each([
    ['0', { 'x-deadline-remaining-ms': '0' }, 0],
    ['grpc 0S', { 'grpc-timeout': '0S' }, 0],
    ['less than reserveMs', { 'x-deadline-remaining-ms': '7' }, 7],
    ['exactly reserveMs', { 'x-deadline-remaining-ms': '10' }, 10],
  ])(
    'with %s left is answered 504 at once, without calling the handler',
    async (_, headers, budgetMs) => {
      const { url, calls, expired } = await serve('enforce')
      const events = record<IngressExpireMessage>(expressChannels.expire.name)
      const res = await request(url, { headers, dispatcher: agent })
      events.stop()
      expect(res.statusCode).toBe(504)
      expect(res.headers['x-deadline-expired']).toBe('1')
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
      const body = (await res.body.json()) as Record<string, unknown>
      // At once: no time is spent on the request, but the time between the
      // deadline's creation and the 504 is real, and a busy machine can
      // deschedule the process for a few ms in between.
      expect(body).toEqual({
        error: 'deadline_exceeded',
        budgetMs,
        elapsedMs: expect.any(Number),
        slice: null,
      })
      expect(body['elapsedMs']).toBeGreaterThanOrEqual(0)
      expect(body['elapsedMs']).toBeLessThan(100)
      expect(calls).toEqual([])
      expect(expired).toHaveLength(1)
      expect(expired[0]).toMatchObject({ stage: 'arrival', action: '504', budgetMs })
      expect(events.messages).toEqual(expired)
    },
  )

  it('in observe mode is reported and handled normally', async () => {
    const { url, calls, expired } = await serve('observe')
    const res = await request(url, {
      headers: { 'x-deadline-remaining-ms': '0' },
      dispatcher: agent,
    })
    expect(res.statusCode).toBe(200)
    expect(await res.body.json()).toEqual({ ok: true })
    expect(calls).toEqual([0])
    expect(expired).toHaveLength(1)
    expect(expired[0]).toMatchObject({ stage: 'arrival', action: 'observed', budgetMs: 0 })
    expect(expired[0]?.deadline.signal.aborted).toBe(false)
  })
})
