import { DEADLINE_HEADER, ManualClock, writeDeadline } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, type IngressExpireMessage } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

describe.each(majors)("mode: 'observe' ($name)", (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('computes and propagates the deadline, reports the request that would have been cut, and lets it finish', async () => {
    // A manual clock, moved past the deadline once the handler has propagated
    // it: what is propagated is the budget less the reserve, not less however
    // long a loaded machine took to reach the handler (5 ms were left once).
    const clock = new ManualClock()
    const app = major.app()
    const expired: IngressExpireMessage[] = []
    const reported = deferred()
    const propagated = deferred()
    app.use(
      deadline({
        clock,
        mode: 'observe',
        reserveMs: 10,
        onExpire: (event) => {
          expired.push(event)
          reported.resolve()
        },
      }),
    )
    app.get(
      '/',
      major.route(async (req, res) => {
        const outbound: Record<string, string> = {}
        writeDeadline(outbound, req.deadline)
        propagated.resolve()
        // Outlive the deadline: the report comes, the handler carries on.
        await reported.promise
        res.json({ propagated: outbound[DEADLINE_HEADER], aborted: req.deadline.signal.aborted })
      }),
    )
    server = await listen(app)
    const answer = request(server.url, {
      headers: { 'x-deadline-remaining-ms': '80' },
      dispatcher: agent,
    })
    await propagated.promise
    clock.advance(80)
    const res = await answer
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-deadline-expired']).toBeUndefined()
    const body = (await res.body.json()) as { propagated: string; aborted: boolean }
    expect(body.aborted).toBe(false)
    expect(Number(body.propagated)).toBeGreaterThan(40)
    expect(Number(body.propagated)).toBeLessThanOrEqual(70)
    expect(expired).toEqual([
      expect.objectContaining({ stage: 'handler', action: 'observed', budgetMs: 80 }),
    ])
    expect(expired[0]?.elapsedMs).toBeGreaterThanOrEqual(69)
  })
})
