import { once } from 'node:events'
import { get, type IncomingMessage } from 'node:http'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { deferred, listen, majors, type Running } from './support/servers.js'

/**
 * A reason phrase the handler assigned for the answer it meant to give
 * (`res.statusMessage = 'Created'`, then its work ran out of time) is as
 * much that answer's as its `content-type`: Node keeps a phrase already
 * set, so `respond`'s `res.status(504)` went out as `504 Created`. The plain
 * 504 always said `Gateway Timeout`; respond's answer now gets the phrase of
 * the status it sets.
 */
describe.each(majors)('respond and a reason phrase the handler set ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function fetchHead(url: string): Promise<IncomingMessage> {
    const req = get(url, { agent: false })
    const [res] = (await once(req, 'response')) as [IncomingMessage]
    res.resume()
    await once(res, 'end')
    return res
  }

  it.each([
    ['respond', true],
    ['the plain 504', false],
  ])('%s goes out with its own status’s phrase, not the handler’s', async (_, withRespond) => {
    const clock = new ManualClock()
    const started = deferred()
    const app = major.app()
    app.use(
      deadline({
        clock,
        reserveMs: 0,
        defaultMs: 1000,
        ...(withRespond && {
          respond: (_req, res) => {
            res.status(504).json({ error: { code: 'deadline_exceeded' } })
          },
        }),
      }),
    )
    app.get('/orders', (_req, res) => {
      res.statusMessage = 'Created'
      started.resolve()
      // Its work never finishes: the deadline answers.
    })
    server = await listen(app)
    const response = fetchHead(`${server.url}/orders`)
    await started.promise
    clock.advance(1000)
    const res = await response
    expect(res.statusCode).toBe(504)
    expect(res.statusMessage).toBe('Gateway Timeout')
  })
})
