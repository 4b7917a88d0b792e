import { ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { type DeadlineMiddlewareOptions, deadline } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

// `x-deadline-expired: 1` is the wire's word that a 504 was the deadline's:
// a caller that sees it does not retry (its own budget is gone too), and
// @hourglass/fetch never does. `respond` changes the answer's shape, not
// what it is; its 504 went out without the marker, so a caller retrying
// 504s (`retry: { statuses: [504] }`) sent the spent request again.

describe.each(majors)("respond's answer to the deadline ($name)", (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  const respond: NonNullable<DeadlineMiddlewareOptions['respond']> = (_req, res) => {
    res.status(504).json({ error: { code: 'deadline_exceeded' } })
  }

  it('carries x-deadline-expired: 1, on arrival and at the deadline', async () => {
    const clock = new ManualClock()
    const app = major.app()
    const entered = deferred()
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock, respond }))
    app.get('/', () => entered.resolve())
    server = await listen(app)
    const agent = client()

    const onArrival = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': '0' },
      dispatcher: agent,
    })
    await onArrival.body.dump()

    // The caller's budget: under the server's own defaultMs the 504 would
    // not say the caller's is gone (ownCapNotCallers.test.ts).
    const pending = request(server.url, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    await entered.promise
    clock.advance(990)
    const atDeadline = await pending
    expect(await atDeadline.body.json()).toEqual({ error: { code: 'deadline_exceeded' } })

    expect(
      [onArrival, atDeadline].map((r) => [r.statusCode, r.headers['x-deadline-expired']]),
    ).toEqual([
      [504, '1'],
      [504, '1'],
    ])
  })
})
