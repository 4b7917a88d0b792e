import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, deadlineInterceptor } from '../src/index.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// undici takes a dispatch's `origin` as a URL or as a string ending in `/`.
// The interceptor's events joined it to the path as it came, so traces and
// metrics read `http://127.0.0.1:port//v1/items` — a URL that was never
// requested, and a second series for every route. No test here measures time.

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

it('reports origin + path whatever form the dispatch origin takes', async () => {
  const server: FaultServer = await faultServer({ type: 'respond', body: 'ok' })
  closers.push(server)
  const base = new Agent({ connect: createConnector() })
  closers.push(base)
  const dispatcher = base.compose(deadlineInterceptor())
  const origin = `http://127.0.0.1:${server.port}`
  events = recordEgress()
  for (const given of [origin, `${origin}/`, new URL(origin)]) {
    const res = await dispatcher.request({ origin: given, path: '/v1/items?key=1', method: 'GET' })
    await res.body.text()
  }
  expect(events.attempts.map((a) => a.url)).toEqual([
    `${origin}/v1/items`,
    `${origin}/v1/items`,
    `${origin}/v1/items`,
  ])
  expect(events.ends.map((e) => e.url)).toEqual(events.attempts.map((a) => a.url))
})
