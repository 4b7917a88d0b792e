import { ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors, type IngressExpireMessage } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

/**
 * A route whose `preprocess` step parses synchronously (a CPU-bound parse:
 * the loop is busy, time passes, no timer runs) past its slice and returns.
 * `plan.run` resolved it `ok`: the request then went on to `model`, and when
 * the parse had used up the whole budget the 504 named `model` — a slice
 * that ran for no time at all, allotted 0 — while the time ran out parsing.
 * The 504 names the slice that ran out. Simulated on a ManualClock whose
 * `now` jumps without running its timers, as a busy loop does.
 */
describe.each(majors)('a slice whose step overran before its timer ran ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function serve(parseUntil: number) {
    const clock = new ManualClock()
    const expired: IngressExpireMessage[] = []
    const modelCalls: string[] = []
    const app = major.app()
    app.use(
      deadline({
        clock,
        defaultMs: 1000,
        reserveMs: 10,
        plan: { preprocess: 0.2, model: 0.8 },
        onExpire: (m) => expired.push(m),
      }),
    )
    app.get(
      '/',
      major.route(async (req, res) => {
        const input = await req.plan!.run('preprocess', () => {
          const at = clock.now()
          clock.now = () => at + parseUntil // the loop was busy parsing
          return 'parsed'
        })
        const answer = await req.plan!.run('model', async () => {
          modelCalls.push(input)
          return 'answer'
        })
        res.json({ answer })
      }),
    )
    app.use(deadlineErrors())
    server = await listen(app)
    const res = await request(server.url, { dispatcher: agent })
    return { status: res.statusCode, body: await res.body.json(), expired, modelCalls }
  }

  it('names the overrunning slice when it used up the whole request', async () => {
    const got = await serve(1200)
    expect(got.status).toBe(504)
    expect(got.body).toMatchObject({ error: 'deadline_exceeded', slice: 'preprocess' })
    expect(got.expired.map((m) => [m.slice, m.action])).toEqual([['preprocess', '504']])
    expect(got.modelCalls).toEqual([])
  })

  it('cuts the overrunning slice as it cuts one whose step is still pending', async () => {
    const got = await serve(500) // its slice was 196 ms; the request had time left
    expect(got.status).toBe(504)
    expect(got.body).toMatchObject({ error: 'deadline_exceeded', slice: 'preprocess' })
    expect(got.expired.map((m) => [m.slice, m.action])).toEqual([['preprocess', '504']])
    expect(got.modelCalls).toEqual([])
  })
})
