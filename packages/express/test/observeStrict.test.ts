import { ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  expressChannels,
  type IngressEndMessage,
  type IngressInvalidHeaderMessage,
  type IngressStartMessage,
} from '../src/index.js'
import { client, listen, majors, type Running, record } from './support/servers.js'

/**
 * `strict` in observe mode: dark mode measures and reports, and never
 * changes an answer. A malformed deadline header was answered 400 all the
 * same, so a dark-mode rollout refused traffic. It is now reported (the
 * invalid-header event and hook, as without `strict`) and the request runs
 * with the budget it would have without `strict`.
 */
describe.each(majors)("strict in mode: 'observe' ($name)", (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('reports a malformed deadline header and lets the request through with the default budget: no 400', async () => {
    const app = major.app()
    const hooked: IngressInvalidHeaderMessage[] = []
    app.use(
      deadline({
        clock: new ManualClock(),
        mode: 'observe',
        strict: true,
        defaultMs: 1500,
        reserveMs: 0,
        onInvalidHeader: (event) => hooked.push(event),
      }),
    )
    app.get('/', (req, res) => {
      res.json({ remainingMs: req.deadline.remaining() })
    })
    server = await listen(app)
    const invalid = record<IngressInvalidHeaderMessage>(expressChannels.invalidHeader.name)
    const starts = record<IngressStartMessage>(expressChannels.start.name)
    const ends = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const res = await request(server.url, {
        headers: { 'x-deadline-remaining-ms': 'abc' },
        dispatcher: agent,
      })
      expect(res.statusCode).toBe(200)
      expect(await res.body.json()).toEqual({ remainingMs: 1500 })
      await ends.count(1)
      expect(invalid.messages.map((m) => m.invalid.map((i) => i.header))).toEqual([
        ['x-deadline-remaining-ms'],
      ])
      expect(hooked).toHaveLength(1)
      expect(starts.messages[0]).toMatchObject({
        mode: 'observe',
        source: 'default',
        refused: false,
      })
      expect(ends.messages[0]?.outcome).toBe('ok')
    } finally {
      invalid.stop()
      starts.stop()
      ends.stop()
    }
  })

  it('enforced, strict still answers 400 and never runs the handler', async () => {
    const app = major.app()
    let calls = 0
    app.use(deadline({ clock: new ManualClock(), strict: true, defaultMs: 1500 }))
    app.get('/', (_req, res) => {
      calls++
      res.end()
    })
    server = await listen(app)
    const res = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': 'abc' },
      dispatcher: agent,
    })
    expect(res.statusCode).toBe(400)
    await res.body.dump()
    expect(calls).toBe(0)
  })
})
