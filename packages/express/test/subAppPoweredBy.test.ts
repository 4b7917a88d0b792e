import { ManualClock } from '@hourglass/core'
import type { Express } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, expressChannels, type IngressLateWriteMessage } from '../src/index.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * A request that reaches a sub-app (`app.use('/api', express())`) after the
 * deadline answered: Express labels the response `X-Powered-By: Express` as
 * it enters (Express 5 in `app.handle`, Express 4 in the sub-app's `init`
 * middleware). That is Express routing, not the handler's late work: no late
 * write. What the handler itself writes there still is one.
 */
describe.each(majors)('a sub-app entered after the 504 ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  /** The deadline runs out in a parent middleware (504); then `next()` enters the sub-app. */
  async function run(
    setUp: (app: Express, sub: Express) => void,
    handler: (res: import('express').Response) => void,
  ) {
    const clock = new ManualClock()
    const app = major.app()
    const sub = major.app()
    setUp(app, sub)
    const late: string[] = []
    const entered = deferred<void>()
    app.use(deadline({ clock, reserveMs: 0, onLateWrite: (event) => late.push(event.method) }))
    app.use((_req, _res, next) => {
      clock.advance(1000)
      next()
    })
    sub.get('/thing', (_req, res) => {
      handler(res)
      entered.resolve()
    })
    app.use('/api', sub)
    server = await listen(app)
    const events = record<IngressLateWriteMessage>(expressChannels.lateWrite.name)
    const answer = await request(`${server.url}/api/thing`, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    await answer.body.dump()
    await entered.promise
    events.stop()
    return { answer, late, channel: events.messages.map((event) => event.method) }
  }

  it("does not report Express's own X-Powered-By on entry", async () => {
    const { answer, late, channel } = await run(
      () => {},
      () => {},
    )
    expect(answer.statusCode).toBe(504)
    expect(late).toEqual([])
    expect(channel).toEqual([])
  })

  it('does not report it where only the sub-app has X-Powered-By enabled', async () => {
    const { answer, late } = await run(
      (app) => app.disable('x-powered-by'),
      () => {},
    )
    expect(answer.statusCode).toBe(504)
    expect(answer.headers['x-powered-by']).toBeUndefined()
    expect(late).toEqual([])
  })

  it("still reports the handler's own writes in the sub-app, X-Powered-By included", async () => {
    const { answer, late, channel } = await run(
      () => {},
      (res) => {
        res.setHeader('x-late', '1')
        res.setHeader('X-Powered-By', 'my-app')
        res.set('X-Powered-By', 'Express')
        res.json({ late: true })
      },
    )
    expect(answer.statusCode).toBe(504)
    expect(answer.headers['x-late']).toBeUndefined()
    expect(late).toEqual(['setHeader', 'setHeader', 'set', 'json'])
    expect(channel).toEqual(late)
  })
})
