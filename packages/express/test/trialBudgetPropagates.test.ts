import { ManualClock, writeDeadline } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

// A budget on trial inside an enforced request (`req.deadline.child(100, {
// observe: true })`, core's dark mode for one step) whose time has passed
// went out with no x-deadline-remaining-ms at all: the next hop took its own
// default (here 30 s) for a call whose caller had 850 ms left, and would cut
// it then. The next hop now hears the request's time.

describe.each(majors)('the next hop under a trial budget that ran out ($name)', (major) => {
  const servers: Running[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()))
  })

  it('gets what the enforced request has left, never its own default', async () => {
    const seen: { header: string | string[] | undefined; budget: number }[] = []
    const next = major.app()
    next.use(deadline({ defaultMs: 30_000, reserveMs: 0 }))
    next.get('/', (req, res) => {
      const header = req.headers['x-deadline-remaining-ms']
      seen.push({ header, budget: Math.round(req.deadline.budgetMs) })
      res.end()
    })
    const nextHop = await listen(next)
    servers.push(nextHop)

    const clock = new ManualClock()
    const entered = deferred()
    const trialOver = deferred()
    const app = major.app()
    app.use(deadline({ defaultMs: 1000, reserveMs: 0, clock }))
    app.get(
      '/',
      major.route(async (req, res) => {
        using trial = req.deadline.child(100, { observe: true })
        entered.resolve()
        await trialOver.promise
        const headers: Record<string, string> = {}
        writeDeadline(headers, trial)
        const answer = await request(nextHop.url, { headers, dispatcher: agent })
        await answer.body.dump()
        res.json({ trialExpired: trial.expired, left: req.deadline.remaining() })
      }),
    )
    const hop = await listen(app)
    servers.push(hop)
    const agent = client()

    const pending = request(hop.url, { dispatcher: agent })
    await entered.promise
    clock.advance(150)
    trialOver.resolve()
    const answer = await pending
    expect(await answer.body.json()).toEqual({ trialExpired: true, left: 850 })
    expect(seen).toEqual([{ header: '850', budget: 850 }])
    await agent.close()
  })
})
