import { ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  deadlineErrors,
  type IngressEndMessage,
  type IngressExpireMessage,
} from '../src/index.js'
import { client, listen, majors, type Running, record } from './support/servers.js'

/**
 * A handler that answers after its deadline's time, before the deadline's
 * timer had its turn: the loop was busy (its own synchronous work, or
 * another request's), and the answer was written in the turn that ended
 * the stall. The answer goes out as written (a 200, late: a 504 could not
 * have been on time either), but it was reported as one in time — end
 * outcome `ok`, no `expire` event, no `onExpire` — so a busy process's late
 * answers were invisible, in dark mode too. Simulated on a ManualClock whose
 * `now` jumps without running its timers, as a busy loop does
 * (`sliceOverrunNamed.test.ts`).
 */
describe.each(majors)(
  'an answer written after the deadline, before its timer ran ($name)',
  (major) => {
    let server: Running | undefined
    const agent = client({ connections: 1 })
    afterEach(async () => {
      await server?.close()
      server = undefined
    })

    async function serve(
      mode: 'enforce' | 'observe',
      busyMs: number,
      { cancelFirst = false }: { cancelFirst?: boolean } = {},
    ) {
      const clock = new ManualClock()
      let signal: AbortSignal | undefined
      const hooked: IngressExpireMessage[] = []
      const expired = record<IngressExpireMessage>('hourglass:ingress:expire')
      const ends = record<IngressEndMessage>('hourglass:ingress:end')
      const app = major.app()
      app.use(
        deadline({ clock, mode, defaultMs: 100, reserveMs: 10, onExpire: (m) => hooked.push(m) }),
      )
      app.get(
        '/',
        major.route(async (req, res) => {
          signal = req.deadline.signal
          // An upstream failed, say: the handler stops its own work, its 504 still due.
          if (cancelFirst) req.deadline.cancel(new Error('upstream failed'))
          const at = clock.now()
          clock.now = () => at + busyMs // the loop was busy: no timer ran
          res.json({ answer: 42 })
        }),
      )
      app.use(deadlineErrors())
      server = await listen(app)
      try {
        const res = await request(server.url, { dispatcher: agent })
        const body = await res.body.json()
        await ends.count(1)
        return {
          status: res.statusCode,
          body,
          aborted: signal?.aborted,
          hooked,
          expired: expired.messages,
          ends: ends.messages,
        }
      } finally {
        expired.stop()
        ends.stop()
      }
    }

    it('reports the late answer as the request running out, action late (enforce)', async () => {
      const got = await serve('enforce', 300)
      // Written before the timer ran: it goes out as written.
      expect(got.status).toBe(200)
      expect(got.body).toEqual({ answer: 42 })
      expect(got.expired.map((m) => [m.stage, m.action, m.elapsedMs])).toEqual([
        ['handler', 'late', 300],
      ])
      expect(got.hooked.map((m) => m.action)).toEqual(['late'])
      expect(got.ends.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 200]])
      // Cancelled, as the timer would have: what still runs for the request stops.
      expect(got.aborted).toBe(true)
    })

    it('reports it when the handler had cancelled its deadline, its 504 still due', async () => {
      const got = await serve('enforce', 300, { cancelFirst: true })
      expect(got.status).toBe(200)
      expect(got.expired.map((m) => m.action)).toEqual(['late'])
      expect(got.ends.map((m) => m.outcome)).toEqual(['expired'])
    })

    it('reports it in dark mode too, as observed, the outcome unchanged', async () => {
      const got = await serve('observe', 300)
      expect(got.status).toBe(200)
      expect(got.expired.map((m) => [m.stage, m.action])).toEqual([['handler', 'observed']])
      expect(got.hooked.map((m) => m.action)).toEqual(['observed'])
      expect(got.ends.map((m) => m.outcome)).toEqual(['ok'])
    })

    it.each([
      ['in time', 50],
      // Past the handler's deadline (100 − reserveMs 10), before the caller's:
      // the answer reached its caller in time.
      ['within the reserve', 95],
    ])('reports nothing for an answer %s', async (_, busyMs) => {
      const got = await serve('enforce', busyMs)
      expect(got.status).toBe(200)
      expect(got.expired).toEqual([])
      expect(got.hooked).toEqual([])
      expect(got.ends.map((m) => m.outcome)).toEqual(['ok'])
      expect(got.aborted).toBe(false)
    })
  },
)
