import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import type { IngressExpireMessage } from '../src/index.js'
import { enterHandler } from './support/enterHandler.js'
import { useServer } from './support/oneServer.js'
import { majors } from './support/servers.js'

// A handler that cancels `req.deadline` (to stop work it had started for
// the request) and then disposes it, the README's way to opt out of its
// expiry, to answer for itself (a stream, SSE): the cancel had armed the 504
// still due at the deadline, and the dispose did not lift it — the stream
// was ended at the deadline (an `expire` event, outcome `expired`), and a
// late answer was replaced by a 504. Disposed, the deadline's expiry is the
// handler's, whether it cancelled first or not.

describe.each(majors)('cancel() then dispose() ($name)', (major) => {
  const served = useServer()

  it.each([
    ['dispose()', (d: Disposable & { dispose(): void }) => d.dispose()],
    ['using (Symbol.dispose)', (d: Disposable & { dispose(): void }) => d[Symbol.dispose]()],
  ] as const)(
    'a stream started after cancel() and %s is not cut at the deadline',
    async (_name, dispose) => {
      const clock = new ManualClock()
      const expired: IngressExpireMessage[] = []
      const options = { clock, onExpire: (m: IngressExpireMessage) => expired.push(m) }
      const { res, pending } = await enterHandler(major, served, options, (req, res) => {
        req.deadline.cancel(new Error('stop the prework'))
        dispose(req.deadline)
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.write('data: a\n\n')
      })
      const answer = await pending
      expect(clock.pendingTimers, 'no timer left due').toBe(0)
      clock.advance(2000)
      res.end('data: b\n\n')
      expect([answer.statusCode, await answer.body.text(), expired]).toEqual([
        200,
        'data: a\n\ndata: b\n\n',
        [],
      ])
    },
  )

  it('cancel() then dispose() and an answer after the deadline: the handler’s answer, no 504', async () => {
    const clock = new ManualClock()
    const { res, pending } = await enterHandler(major, served, { clock }, (req) => {
      req.deadline.cancel(new Error('stop the prework'))
      req.deadline.dispose()
    })
    clock.advance(2000)
    res.send('mine')
    const answer = await pending
    expect([answer.statusCode, await answer.body.text()]).toEqual([200, 'mine'])
  })

  it('cancel() alone still keeps the 504 due at the deadline (the dispose lifts it, not the cancel)', async () => {
    const clock = new ManualClock()
    const { pending } = await enterHandler(major, served, { clock }, (req) => {
      req.deadline.cancel(new Error('stop the prework'))
    })
    clock.advance(990)
    const answer = await pending
    await answer.body.dump()
    expect(answer.statusCode).toBe(504)
  })
})
