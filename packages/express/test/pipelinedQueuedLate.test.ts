import type { Socket } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import { deadline, type IngressEndMessage, type IngressExpireMessage } from '../src/index.js'
import { pipelined, pipelinedGet } from './support/pipelined.js'
import { deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * A pipelined answer the handler ended at once, queued behind a slower
 * answer on its connection, leaves only when that one is done: after its
 * caller's deadline here. Whether it was reported `late` depended on which
 * ran first, its deadline's timer or the answer ahead: `ok` (no expire
 * event, no onExpire) when the timer ran while it waited, `expired`/`late`
 * when the answer ahead came from a timer of the same batch (another
 * request's 504) and the queued one was flushed before its own timer had
 * its turn. One rule, judged at its end against the caller's budget.
 */
describe.each(majors)(
  'an answer queued behind a pipelined one past its deadline ($name)',
  (major) => {
    const running: Running[] = []
    const sockets: Socket[] = []
    afterEach(async () => {
      for (const socket of sockets.splice(0)) socket.destroy()
      await Promise.all(running.splice(0).map((s) => s.close()))
    })

    async function serve(timerFirst: boolean) {
      const clock = new ManualClock()
      const gate = deferred()
      const answered = deferred()
      const hooked: IngressExpireMessage[] = []
      const expires = record<IngressExpireMessage>('hourglass:ingress:expire')
      const ends = record<IngressEndMessage>('hourglass:ingress:end')
      onTestFinished(() => {
        expires.stop()
        ends.stop()
      })
      const app = major.app()
      app.use(deadline({ clock, defaultMs: 100, reserveMs: 0, onExpire: (m) => hooked.push(m) }))
      app.get('/slow', (_req, res) => {
        void gate.promise.then(() => res.json({ slow: true }))
      })
      app.get('/quick', (_req, res) => {
        res.json({ quick: true }) // answered at once, in time
        answered.resolve()
      })
      const server = await listen(app)
      running.push(server)
      const connection = await pipelined(
        server,
        pipelinedGet('/slow', 10_000) + pipelinedGet('/quick', 100),
        sockets,
      )
      await answered.promise
      if (timerFirst) {
        clock.advance(150) // /quick's deadline timer runs while its answer waits
      } else {
        const at = clock.now()
        clock.now = () => at + 150 // time passes, no timer has its turn yet
      }
      gate.resolve()
      await ends.count(2)
      const text = await connection.text()
      const quick = ends.messages.find((m) => (m.req as { url?: string }).url === '/quick')
      return { text, quick, expires: expires.messages, hooked }
    }

    for (const timerFirst of [true, false]) {
      it(`reports it late, whichever runs first (${timerFirst ? 'its timer' : 'the answer ahead'})`, async () => {
        const got = await serve(timerFirst)
        // Goes out as written, after the answer ahead.
        expect(got.text).toMatch(/\{"slow":true\}HTTP\/1\.1 200 [\s\S]*\{"quick":true\}$/)
        expect([got.quick?.statusCode, got.quick?.outcome]).toEqual([200, 'expired'])
        expect(got.expires.map((m) => [(m.req as { url?: string }).url, m.action])).toEqual([
          ['/quick', 'late'],
        ])
        expect(got.hooked.map((m) => m.action)).toEqual(['late'])
      })
    }
  },
)
