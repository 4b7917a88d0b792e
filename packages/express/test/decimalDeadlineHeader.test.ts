import { ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterAll, afterEach, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

// A caller with 1.5 s left that writes its budget as a decimal (its
// `deadline - performance.now()`, or Python's `1500.0`) got the default
// budget (here 5 s): the server worked on for 3.5 s after the caller had
// given up, and passed those 5 s on downstream. So did one whose deadline
// had already passed and that sent it negative (`-5`).

let server: Running | undefined
const agent = client()
afterEach(async () => {
  await server?.close()
  server = undefined
})
afterAll(() => agent.close())

it('a decimal x-deadline-remaining-ms gives the handler its whole ms, never the longer default', async () => {
  const app = majors[0].app()
  app.use(deadline({ clock: new ManualClock(), defaultMs: 5000, reserveMs: 0, strict: true }))
  app.get('/', (req, res) => {
    res.json({ remainingMs: req.deadline.remaining() })
  })
  server = await listen(app)
  for (const [sent, ms] of [
    ['1500.5', 1500],
    ['1500.0', 1500],
  ] as const) {
    const res = await request(server.url, {
      headers: { 'x-deadline-remaining-ms': sent },
      dispatcher: agent,
    })
    expect(res.statusCode).toBe(200)
    expect(await res.body.json()).toEqual({ remainingMs: ms })
  }
})

it('a negative x-deadline-remaining-ms is a deadline already past: a 504 at once, the handler never runs', async () => {
  const app = majors[0].app()
  app.use(deadline({ clock: new ManualClock(), defaultMs: 5000, reserveMs: 0, strict: true }))
  let ran = 0
  app.get('/', (_req, res) => {
    ran++
    res.json({ ran })
  })
  server = await listen(app)
  const res = await request(server.url, {
    headers: { 'x-deadline-remaining-ms': '-5' },
    dispatcher: agent,
  })
  await res.body.dump()
  expect({ status: res.statusCode, expired: res.headers['x-deadline-expired'], ran }).toEqual({
    status: 504,
    expired: '1',
    ran: 0,
  })
})
