import { ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

// Envoy's `x-envoy-expected-rq-timeout-ms: 0` means "no timeout" (Envoy
// never sends 0; out of time it sends 1). Read as 0 ms left, such a caller
// got a 504 on arrival and its handler never ran.

describe.each(majors)('x-envoy-expected-rq-timeout-ms: 0 ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('is no deadline: the handler runs with defaultMs, in strict mode too', async () => {
    for (const strict of [false, true]) {
      const app = major.app()
      app.use(deadline({ clock: new ManualClock(), defaultMs: 1500, reserveMs: 0, strict }))
      app.get('/', (req, res) => {
        res.json({ remainingMs: req.deadline.remaining() })
      })
      server = await listen(app)
      const res = await request(server.url, {
        headers: { 'x-envoy-expected-rq-timeout-ms': '0' },
        dispatcher: client(),
      })
      const body = await res.body.json()
      expect({ strict, status: res.statusCode, body }).toEqual({
        strict,
        status: 200,
        body: { remainingMs: 1500 },
      })
      await server.close()
      server = undefined
    }
  })
})
