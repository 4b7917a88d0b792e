import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import {
  Deadline,
  isDeadlineExceeded,
  isExpiryOf,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { deadline, deadlineErrors, expressChannels } from '@hourglass/express'
import express, { type NextFunction, type Request, type Response } from 'express'
import express4 from 'express4'
import { describe, expect, it, onTestFinished } from 'vitest'
import { addWithDeadline } from '../src/index.js'
import { collect } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// A handler with most of its request's 2 s left scheduled a reminder 5 s
// out (addWithDeadline takes the request's deadline by default), and passed
// the refusal on with next(error): deadlineErrors() answered 504
// `x-deadline-expired: 1` 3 ms into the request, and the ingress published
// an `expire`. The job's own schedule did not fit; the request had not run
// out.
describe.skipIf(!available)('a delay refused under a request', () => {
  const redis = useRedisQueues()

  /**
   * An Express app with deadline() and deadlineErrors() whose handler adds a
   * delayed job; what reached the app's own error handler. `ownHandler:
   * false`: none after deadlineErrors(), Express's own final handler answers.
   */
  async function serve(
    options: Parameters<typeof deadline>[0],
    before: () => void = () => {},
    { ownHandler = true, makeApp = () => express() } = {},
  ) {
    const { queue } = await redis.queue()
    const passedOn: unknown[] = []
    const expired = collect(expressChannels.expire)
    const app = makeApp()
    app.use(deadline(options))
    app.post('/remind', async (_req, res, next) => {
      before()
      try {
        const job = await addWithDeadline(queue, 'remind', {}, { delay: 5000 })
        res.json({ id: job.id })
      } catch (error) {
        next(error)
      }
    })
    app.use(deadlineErrors())
    if (ownHandler) {
      app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
        passedOn.push(error)
        res.status(500).json({ error: 'internal' })
      })
    } else {
      // Express's final handler: no stack in the answer.
      app.set('env', 'production')
    }
    const server = app.listen(0, '127.0.0.1')
    await once(server, 'listening')
    onTestFinished(() => {
      server.close()
      server.closeAllConnections()
    })
    const { port } = server.address() as AddressInfo
    // The caller's own budget (a header), as `defaultMs`: only its end says
    // `x-deadline-expired` (a cap of the server's own does not).
    const res = await fetch(`http://127.0.0.1:${port}/remind`, {
      method: 'POST',
      headers: { 'x-deadline-remaining-ms': String(options?.defaultMs ?? 2000) },
    })
    return { res, passedOn, expired, queue }
  }

  it("with most of the request's time left, it is passed on (the app's 500), not the request's 504", async () => {
    // A clock that does not move: the request has its whole 2 s throughout.
    const { res, passedOn, expired, queue } = await serve({
      defaultMs: 2000,
      clock: new ManualClock(),
    })
    expect(res.status).toBe(500)
    expect(res.headers.get('x-deadline-expired')).toBeNull()
    expect(expired).toHaveLength(0)
    expect(passedOn).toHaveLength(1)
    // Still a deadline error, saying what did not fit.
    expect(isDeadlineExceeded(passedOn[0])).toBe(true)
    expect((passedOn[0] as Error).message).toMatch(/has a delay of 5000 ms but only \d+ ms left/)
    expect(await queue.count()).toBe(0)
  })

  // A DeadlineExceededError says 504 on its prototype: with no handler of
  // the app's, Express's own final handler (and an `err.status ?? 500`
  // handler) answered `504 Gateway Timeout` 2 ms into a 2 s request, for a
  // schedule that could never fit.
  it.each([
    { name: 'express 5', makeApp: () => express() },
    { name: 'express 4', makeApp: () => express4() },
  ])(
    "with most of the request's time left and no handler of the app's: Express answers 500, not 504 Gateway Timeout ($name)",
    async ({ makeApp }) => {
      const { res, queue } = await serve({ defaultMs: 2000, clock: new ManualClock() }, undefined, {
        ownHandler: false,
        makeApp: makeApp as () => ReturnType<typeof express>,
      })
      await res.text()
      expect(res.status).toBe(500)
      expect(res.headers.get('x-deadline-expired')).toBeNull()
      expect(await queue.count()).toBe(0)
    },
  )

  it("with the request's time really gone (within the largest reserve of its end), it is still the request's 504", async () => {
    const clock = new ManualClock()
    const { res, passedOn, expired } = await serve({ defaultMs: 2000, clock }, () =>
      clock.advance(1950),
    )
    expect(res.status).toBe(504)
    expect(res.headers.get('x-deadline-expired')).toBe('1')
    expect(expired).toHaveLength(1)
    expect(passedOn).toHaveLength(0)
  })
})

describe('whose expiry a refused delay is', () => {
  const queue = {
    name: 'q',
    qualifiedName: 'bull:q',
    backend: undefined,
    add: () => Promise.reject(new Error('not to be added')),
  }
  const refused = (deadline: Deadline) =>
    addWithDeadline(queue, 'j', {}, { deadline, delay: 5000 }).catch((error: unknown) => error)

  it("with time left, no deadline's own: not the request's, not even the one it was added under", async () => {
    const clock = new ManualClock()
    const request = Deadline.after(2000, { clock })
    const error = await runWithDeadline(request, () => refused(request))
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(isExpiryOf(error, request)).toBe(false)
  })

  it('near its end, the expiry of the deadline it was added under — and of no unrelated one', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(2000, { clock })
    const slice = Deadline.after(1000, { clock, parent: request })
    clock.advance(950)
    // The request's slice, near its end: the request's own line.
    const error = await refused(slice)
    expect(isExpiryOf(error, request)).toBe(true)
    // A cap of the app's own, near its end, under a request with time left: not the request's.
    const cap = Deadline.after(1000, { clock })
    const other = Deadline.after(60_000, { clock })
    expect(isExpiryOf(await refused(cap), other)).toBe(false)
  })
})
