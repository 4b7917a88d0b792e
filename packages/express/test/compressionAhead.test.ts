import { gunzipSync } from 'node:zlib'
import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import {
  deadline,
  expressChannels,
  type IngressEndMessage,
  type IngressExpireMessage,
} from '../src/index.js'
import { gzipAhead } from './support/gzipAhead.js'
import { useServer } from './support/oneServer.js'
import { deferred, majors, record } from './support/servers.js'

/**
 * `compression()` mounted ahead of `deadline()` (`gzipAhead`, its
 * mechanism): the handler's `res.json()` hands the body to zlib, and Node's
 * `end` is called only once the compressed bytes have been written, which
 * for a client reading slowly waits for the socket to drain. The deadline
 * that fell in that wait took the answer for a started stream: reported it
 * `expired` (action `ended`), and destroyed it a second later — measured
 * with compression 1.8: a 32 MB JSON answered at once under a 300 ms
 * budget, its client cut after 5.4 MB ("aborted"), where without
 * compression the whole answer arrived. The handler ended it in time: it
 * goes out whole, as an uncompressed answer does, and the request ends `ok`.
 */
describe.each(majors)('an answer ended in time behind compression ($name)', (major) => {
  const served = useServer()

  it('goes out whole when its end completes after the deadline: not cut, not expired', async () => {
    const clock = new ManualClock()
    const drained = deferred()
    const answered = deferred()
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    const expired = record<IngressExpireMessage>(expressChannels.expire.name)
    try {
      const app = major.app()
      app.use(gzipAhead(drained.promise))
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      const rows = Array.from({ length: 100 }, (_, i) => `row ${i}`)
      app.get('/', (_req, res) => {
        res.json({ rows })
        answered.resolve()
      })
      const { pending } = await served.send(app)
      await answered.promise
      clock.advance(990) // the deadline, the compressed body still waiting to drain
      clock.advance(1000) // and the grace a started stream's end gets
      drained.resolve()
      const res = await pending
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-encoding']).toBe('gzip')
      const body = Buffer.from(await res.body.arrayBuffer())
      expect(JSON.parse(gunzipSync(body).toString())).toEqual({ rows })
      await ended.count(1)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['ok', 200]])
      expect(expired.messages).toEqual([])
    } finally {
      ended.stop()
      expired.stop()
    }
  })
})
