import { type FaultServer, faultServer } from '@hourglass/testkit'
import { BalancedPool, Client, type Dispatcher, Pool } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, deadlineInterceptor } from '../src/index.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// undici's Pool and Client have a request API of their own that takes no
// origin (`pool.request({ path, method })`): the Client beneath adds its own
// as it makes the request. Composed with the interceptor, the events named
// the path alone (`/v1/items`), and @hourglass/otel's `url.full` with them,
// where the README says "URLs are origin + path".

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

const makers: [string, (url: string) => Dispatcher & { close(): Promise<void> }][] = [
  ['Pool', (url) => new Pool(url, { connect: createConnector() })],
  ['Client', (url) => new Client(url, { connect: createConnector() })],
]

it.each(makers)("names origin + path for a %s's own request API", async (_name, make) => {
  const server: FaultServer = await faultServer({ type: 'respond', body: 'ok' })
  closers.push(server)
  const base = make(server.url)
  closers.push(base)
  events = recordEgress()
  const res = await base
    .compose(deadlineInterceptor())
    .request({ path: '/v1/items?key=1', method: 'GET' })
  await res.body.text()
  const url = `http://127.0.0.1:${server.port}/v1/items`
  expect(events.attempts.map((a) => a.url)).toEqual([url])
  expect(events.ends.map((e) => e.url)).toEqual([url])
})

it.each(makers)('names it on a retry too (%s)', async (_name, make) => {
  const server: FaultServer = await faultServer((_req, i) =>
    i === 0 ? { type: 'respond', status: 503 } : { type: 'respond', body: 'ok' },
  )
  closers.push(server)
  const base = make(server.url)
  closers.push(base)
  events = recordEgress()
  const res = await base
    .compose(deadlineInterceptor({ retry: { statuses: [503] } }))
    .request({ path: '/v1/items', method: 'GET' })
  expect(res.statusCode).toBe(200)
  await res.body.text()
  const url = `http://127.0.0.1:${server.port}/v1/items`
  expect(events.attempts.map((a) => [a.attempt, a.url])).toEqual([
    [1, url],
    [2, url],
  ])
  expect(events.retries.map((r) => r.url)).toEqual([url])
})

it('names each attempt its own upstream through a BalancedPool', async () => {
  const a: FaultServer = await faultServer({ type: 'respond', status: 503 })
  const b: FaultServer = await faultServer({ type: 'respond', status: 503 })
  closers.push(a, b)
  const pool = new BalancedPool([a.url, b.url], { connect: createConnector() })
  closers.push(pool)
  events = recordEgress()
  const res = await pool
    .compose(deadlineInterceptor({ retry: { statuses: [503] } }))
    .request({ path: '/x', method: 'GET' })
  await res.body.text()
  // One attempt to each upstream (the pool's round robin), each named so.
  expect([a.records.length, b.records.length]).toEqual([1, 1])
  const urls = events.attempts.map((m) => m.url)
  expect(urls).toHaveLength(2)
  expect(new Set(urls)).toEqual(
    new Set([`http://127.0.0.1:${a.port}/x`, `http://127.0.0.1:${b.port}/x`]),
  )
})

it("names a retry a busy Pool queues (made outside the dispatch) with its first attempt's origin", async () => {
  let answered = 0
  const server: FaultServer = await faultServer((req) =>
    req.url?.startsWith('/slow')
      ? { type: 'respond', body: 'slow', delayMs: 200 }
      : answered++ === 0
        ? { type: 'respond', status: 503, delayMs: 50 }
        : { type: 'respond', body: 'ok' },
  )
  closers.push(server)
  const pool = new Pool(server.url, { connect: createConnector(), connections: 1 })
  closers.push(pool)
  events = recordEgress()
  const retried = pool
    .compose(deadlineInterceptor({ retry: { statuses: [503] } }))
    .request({ path: '/x', method: 'GET' })
  // Its first attempt has the one connection: a request behind it queues,
  // and takes that connection before the retry, which queues behind it.
  await expect.poll(() => server.records.length).toBe(1)
  const slow = pool.request({ path: '/slow', method: 'GET' })
  const res = await retried
  await res.body.text()
  await (await slow).body.text()
  const url = `http://127.0.0.1:${server.port}/x`
  expect(events.attempts.map((a) => [a.attempt, a.url])).toEqual([
    [1, url],
    [2, url],
  ])
})
