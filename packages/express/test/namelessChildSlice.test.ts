import { type DeadlineExceededError, ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type DeadlineMiddlewareOptions,
  deadline,
  deadlineErrors,
  type IngressExpireMessage,
} from '../src/index.js'
import { aborted, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * A handler gives one call its own timeout inside a named step
 * (`step.child(ms)`, made without a name). When that timeout is what runs
 * out, the 504, `respond`'s error and `onExpire` name the step: before, they
 * said `"slice": null`, the step nowhere to be seen.
 */
describe.each(majors)('a nameless child of a named deadline ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function serve(options: DeadlineMiddlewareOptions = {}) {
    const clock = new ManualClock()
    const expired: IngressExpireMessage[] = []
    const started = deferred()
    const app = major.app()
    app.use(deadline({ clock, onExpire: (m) => expired.push(m), ...options }))
    app.get(
      '/',
      major.route(async (req) => {
        const call = req.deadline.child(1000, { name: 'db' }).child(20)
        started.resolve()
        await aborted(call.signal)
        throw call.signal.reason
      }),
    )
    app.use(deadlineErrors())
    server = await listen(app)
    const answer = request(server.url)
    await started.promise
    clock.advance(20)
    const res = await answer
    return { status: res.statusCode, body: (await res.body.json()) as unknown, expired }
  }

  it('names the step in the 504 and in onExpire', async () => {
    const { status, body, expired } = await serve()
    expect(status).toBe(504)
    expect(body).toMatchObject({ error: 'deadline_exceeded', slice: 'db' })
    expect(expired.map((m) => m.slice)).toEqual(['db'])
  })

  it('names the step in the error respond is given', async () => {
    const slices: unknown[] = []
    const { status, body } = await serve({
      respond: (_req, res, error: DeadlineExceededError) => {
        slices.push(error.slice)
        res.status(504).json({ step: error.slice ?? null })
      },
    })
    expect(status).toBe(504)
    expect(body).toEqual({ step: 'db' })
    expect(slices).toEqual(['db'])
  })
})
