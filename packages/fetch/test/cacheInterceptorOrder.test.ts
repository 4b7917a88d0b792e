import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { Agent, interceptors, request } from 'undici'
import { describe, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor } from '../src/index.js'
import { rejection } from './helpers.js'
import { useCleanup } from './support/useCleanup.js'

// What the README decides for undici's cache interceptor: composed outside
// the deadline layer, a stored answer is served whatever the budget (a hit
// sends nothing); beneath it, or beneath createFetch, a call with under
// minBudgetMs left is refused before anyone knows whether it would hit.

const { keep, record } = useCleanup()

async function cacheableServer(): Promise<{ url: string; hits: () => number }> {
  let hits = 0
  const server = createServer((_req, res) => {
    hits += 1
    res.setHeader('cache-control', 'max-age=60')
    res.end(`answer ${hits}`)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  keep({ close: () => void server.close() })
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/item`, hits: () => hits }
}

/** A deadline with 3 ms left: under the default minBudgetMs (5), so any call judged under it is refused. */
const spent = () => Deadline.after(3, { clock: new ManualClock() })

describe("undici's cache interceptor and the deadline layer", () => {
  it('composed outside it: a stored answer is served with the budget spent, nothing sent', async () => {
    const server = await cacheableServer()
    const agent = keep(new Agent())
    const dispatcher = agent.compose(deadlineInterceptor(), interceptors.cache())
    const first = await request(server.url, { dispatcher, deadline: Deadline.after(2000) } as never)
    expect(await first.body.text()).toBe('answer 1')
    const events = record()
    const hit = await request(server.url, { dispatcher, deadline: spent() } as never)
    expect(hit.statusCode).toBe(200)
    expect(await hit.body.text()).toBe('answer 1')
    expect(server.hits()).toBe(1)
    // The hit never reached the deadline layer: no attempt.
    expect(events.attempts).toEqual([])
  })

  it('composed beneath it: a call with the budget spent is refused, cached or not', async () => {
    const server = await cacheableServer()
    const agent = keep(new Agent())
    const dispatcher = agent.compose(interceptors.cache(), deadlineInterceptor())
    const first = await request(server.url, { dispatcher, deadline: Deadline.after(2000) } as never)
    expect(await first.body.text()).toBe('answer 1')
    const error = await rejection(request(server.url, { dispatcher, deadline: spent() } as never))
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(server.hits()).toBe(1)
    // With budget, the stored answer is served through the layer as an attempt of its own.
    const events = record()
    const hit = await request(server.url, { dispatcher, deadline: Deadline.after(2000) } as never)
    expect(await hit.body.text()).toBe('answer 1')
    expect(events.ends).toMatchObject([{ statusCode: 200 }])
    expect(server.hits()).toBe(1)
  })

  it('beneath createFetch: refused the same, its layer being the outermost', async () => {
    const server = await cacheableServer()
    const fetch = keep(createFetch({ dispatcher: new Agent().compose(interceptors.cache()) }))
    expect(await (await fetch(server.url, { deadline: Deadline.after(2000) })).text()).toBe(
      'answer 1',
    )
    const error = await rejection(fetch(server.url, { deadline: spent() }))
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(await (await fetch(server.url, { deadline: Deadline.after(2000) })).text()).toBe(
      'answer 1',
    )
    expect(server.hits()).toBe(1)
  })
})
