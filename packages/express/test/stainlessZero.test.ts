import { ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, type IngressInvalidHeaderMessage } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

// The official openai (and anthropic) SDK sends its per-request timeout as
// `X-Stainless-Timeout: Math.trunc(timeoutMs / 1000)`: a client with
// `timeout: 500` sends `0`. That is the SDK's well-formed way of saying
// "under a second" — no deadline we can read, not a malformed header. Taken
// for one, a server that trusts the header with `strict: true` answered
// every such SDK call 400, and every other server reported it as invalid.

describe.each(majors)("the openai SDK's X-Stainless-Timeout: 0 ($name)", (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it.each([false, true])(
    'is ignored, not refused or reported as malformed (strict: %s): the request gets defaultMs',
    async (strict) => {
      const app = major.app()
      const invalid: IngressInvalidHeaderMessage[] = []
      app.use(
        deadline({
          clock: new ManualClock(),
          defaultMs: 1500,
          reserveMs: 0,
          strict,
          trust: ['x-deadline-remaining-ms', 'x-stainless-timeout'],
          onInvalidHeader: (event) => invalid.push(event),
        }),
      )
      app.post('/v1/chat/completions', (req, res) => {
        res.json({ remainingMs: req.deadline.remaining() })
      })
      server = await listen(app)
      const res = await request(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'x-stainless-timeout': '0', 'content-type': 'application/json' },
        body: '{}',
        dispatcher: client(),
      })
      const body = await res.body.json()
      expect({ status: res.statusCode, body }).toEqual({ status: 200, body: { remainingMs: 1500 } })
      expect(invalid.map((e) => e.invalid)).toEqual([])
    },
  )
})
