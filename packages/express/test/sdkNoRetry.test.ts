import { DeadlineExceededError, ManualClock } from '@hourglass/core'
import OpenAI from 'openai'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

// The official openai and anthropic SDKs retry every 5xx (twice by default,
// after a back-off) unless the answer says `x-should-retry: false`; they do
// not read `x-deadline-expired`. A deadline's 504 sent to such a caller
// (`trust: ['x-stainless-timeout']` is for them) was sent three times: the
// work it stopped done again twice, for a budget the server caps the same
// way each time, and the caller told only after all three.

const TRUST = ['x-deadline-remaining-ms', 'x-stainless-timeout'] as const

describe.each(majors)("a deadline's answer tells the SDKs not to retry ($name)", (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('the openai client gets the 504 once: one request, not three', async () => {
    const clock = new ManualClock()
    const app = major.app()
    let calls = 0
    const entered = deferred()
    app.use(deadline({ clock, maxMs: 1000, reserveMs: 0, trust: [...TRUST] }))
    app.post('/v1/chat/completions', (_req, res) => {
      calls++
      // The first call: a slow model, it never answers in time. A retry
      // (what the 504 must prevent) is answered at once, to fail fast.
      if (calls === 1) entered.resolve()
      else res.json({ id: 'r', object: 'chat.completion', created: 0, model: 'm', choices: [] })
    })
    app.use(deadlineErrors())
    server = await listen(app)
    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'k' })
    const answer = openai.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error)
    await entered.promise
    clock.advance(1000) // the SDK's 600 s timeout, cut to maxMs, runs out
    const error = (await answer) as InstanceType<typeof OpenAI.APIError>
    // maxMs is the server's own cap: the SDK's budget is not gone (no
    // `x-deadline-expired`), but each retry would be cut at the same cap.
    expect({
      status: error.status,
      expired: error.headers?.get('x-deadline-expired'),
      shouldRetry: error.headers?.get('x-should-retry'),
      calls,
    }).toEqual({ status: 504, expired: null, shouldRetry: 'false', calls: 1 })
  })

  it("says so on respond's answer (a budget spent on arrival) and on deadlineErrors()' 504 for a slice, over the handler's own x-should-retry", async () => {
    const app = major.app()
    app.use(
      deadline({
        defaultMs: 5000,
        respond: (_req, res) => {
          res.status(504).json({ error: { code: 'deadline_exceeded' } })
        },
      }),
    )
    app.get('/respond', () => {}) // never runs: the budget is spent on arrival
    app.get('/slice', (_req, res, next) => {
      res.setHeader('x-should-retry', 'true')
      next(new DeadlineExceededError({ budgetMs: 100, elapsedMs: 100, slice: 'model' }))
    })
    app.use(deadlineErrors())
    server = await listen(app)
    const dispatcher = client()
    const seen = []
    for (const [path, budget] of [
      ['/respond', '0'],
      ['/slice', '1000'],
    ] as const) {
      const res = await request(`${server.url}${path}`, {
        headers: { 'x-deadline-remaining-ms': budget },
        dispatcher,
      })
      await res.body.dump()
      seen.push([path, res.statusCode, res.headers['x-should-retry']])
    }
    expect(seen).toEqual([
      ['/respond', 504, 'false'],
      ['/slice', 504, 'false'],
    ])
  })
})
