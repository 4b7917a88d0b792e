import { ClientClosedError, ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

// A handler that cancels its own `req.deadline` (to stop its work: an
// upstream failed, a user pressed stop) or disposes it (`using d =
// req.deadline`, leaving the handler while its work goes on) and then never
// answers: the cancel released the deadline's timer, so no 504 ever came —
// the request hung until the client or a server timeout gave up. The 504 is
// the middleware's promise to the caller: it still comes at the deadline.

describe.each(majors)('a handler that ends its own deadline ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it.each(['cancel', 'dispose'] as const)(
    'req.deadline.%s() and no answer: the 504 still comes at the deadline',
    async (end) => {
      const clock = new ManualClock()
      const app = major.app()
      const entered = deferred()
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      app.get('/', (req) => {
        if (end === 'cancel') req.deadline.cancel(new Error('stop the work'))
        else req.deadline.dispose()
        entered.resolve()
      })
      server = await listen(app)
      const pending = request(server.url, { dispatcher: client() })
      // Cut by the server's close if the assertion below fails: no unhandled rejection.
      pending.catch(() => {})
      await entered.promise
      // Something is still due to answer (else the request below waits for good).
      expect(clock.pendingTimers, 'timers left to answer the request').toBeGreaterThan(0)
      clock.advance(990)
      const res = await pending
      await res.body.dump()
      expect([res.statusCode, res.headers['x-deadline-expired']]).toEqual([504, '1'])
    },
  )

  it('cancelled with ClientClosedError while the client is still there, passed to deadlineErrors() (which answers nothing for it): the 504 at the deadline', async () => {
    const clock = new ManualClock()
    const app = major.app()
    const entered = deferred()
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
    app.get('/', (req, _res, next) => {
      const error = new ClientClosedError()
      req.deadline.cancel(error)
      next(error)
      entered.resolve()
    })
    app.use(deadlineErrors())
    server = await listen(app)
    const pending = request(server.url, { dispatcher: client() })
    pending.catch(() => {})
    await entered.promise
    expect(clock.pendingTimers, 'timers left to answer the request').toBeGreaterThan(0)
    clock.advance(990)
    const res = await pending
    await res.body.dump()
    expect(res.statusCode).toBe(504)
  })
})
