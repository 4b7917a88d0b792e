import { Readable } from 'node:stream'
import { currentDeadline } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { aborted, client, listen, majors, type Running } from './support/servers.js'

describe.each(majors)('with a body parser in the chain ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  function app() {
    const a = major.app()
    a.use(deadline({ reserveMs: 10 }))
    a.use(major.json())
    a.post(
      '/echo',
      major.route(async (req, res) => {
        // Async work between parsing and answering: the deadline must still be the current one.
        await new Promise((resolve) => setImmediate(resolve))
        res.json({
          body: req.body,
          sameDeadline: currentDeadline() === req.deadline,
          remainingMs: Math.round(req.deadline.remaining()),
        })
      }),
    )
    a.post(
      '/slow',
      major.route(async (req, res) => {
        await aborted(req.deadline.signal)
        res.json({ tooLate: req.body })
      }),
    )
    a.use(deadlineErrors())
    return a
  }

  it('the parsed handler still runs inside the request deadline (AsyncLocalStorage survives the parser)', async () => {
    server = await listen(app())
    const res = await request(`${server.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '5000' },
      body: JSON.stringify({ question: 'how long?' }),
      dispatcher: agent,
    })
    const body = (await res.body.json()) as Record<string, unknown>
    expect(res.statusCode).toBe(200)
    expect(body.body).toEqual({ question: 'how long?' })
    expect(body.sameDeadline).toBe(true)
    expect(body.remainingMs).toBeGreaterThan(4000)
    expect(body.remainingMs).toBeLessThanOrEqual(4990)
  })

  it('a parsed request that runs out of time gets the 504, and the next request on the connection is served', async () => {
    server = await listen(app())
    const res = await request(`${server.url}/slow`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '60' },
      body: JSON.stringify({ n: 1 }),
      dispatcher: agent,
    })
    expect(res.statusCode).toBe(504)
    expect(await res.body.json()).toMatchObject({ error: 'deadline_exceeded', budgetMs: 60 })
    const next = await request(`${server.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ n: 2 }),
      dispatcher: agent,
    })
    expect(await next.body.json()).toMatchObject({ body: { n: 2 }, sameDeadline: true })
    expect(server.connections).toHaveLength(1)
  })

  it('a body still uploading when time runs out: the 504 is answered on time, without waiting for the body', async () => {
    server = await listen(app())
    // Part of the body, then nothing more: the caller is stuck.
    const stalled = new Readable({ read() {} })
    stalled.push('{"partial":')
    const uploader = client()
    const startedAt = performance.now()
    const res = await request(`${server.url}/echo`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': '1000',
        'x-deadline-remaining-ms': '100',
      },
      body: stalled,
      dispatcher: uploader,
    })
    const tookMs = performance.now() - startedAt
    expect(res.statusCode).toBe(504)
    expect(res.headers['x-deadline-expired']).toBe('1')
    expect(await res.body.json()).toMatchObject({ error: 'deadline_exceeded', budgetMs: 100 })
    expect(tookMs).toBeLessThan(1000)
    stalled.destroy()
    await uploader.destroy()
  })
})
