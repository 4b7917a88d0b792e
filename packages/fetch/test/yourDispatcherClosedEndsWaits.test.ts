import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { Agent } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { nextRetry, recordEgress } from './helpers.js'

// A dispatcher of the caller's own (`createFetch({ dispatcher })`, or a
// call's `init.dispatcher`) closed or destroyed at shutdown: a call waiting
// to retry slept out the rest of its Retry-After (up to a minute, keeping the
// process up) and then failed on the closed Agent with "The client is
// closed"; one whose 503 came back after the close waited for it too.

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
})

/** Answers 503 with Retry-After: 30, each answer once `release()` allows it (at once by default). */
async function busy(held = false): Promise<{
  url: string
  requests: () => number
  arrived: Promise<void>
  release: () => void
}> {
  let requests = 0
  let release = () => {}
  const gate = held ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve()
  let arrive = () => {}
  const arrived = new Promise<void>((resolve) => (arrive = resolve))
  const server = createServer((_req, res) => {
    requests++
    arrive()
    void gate.then(() => res.writeHead(503, { 'retry-after': '30' }).end('busy'))
  })
  servers.push(server)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    requests: () => requests,
    arrived,
    release: () => release(),
  }
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
}

describe('a dispatcher of yours closed or destroyed while a call waits to retry', () => {
  it.each([
    ['destroy', 'UND_ERR_DESTROYED', 'factory'],
    ['close', 'UND_ERR_CLOSED', 'factory'],
    ['destroy', 'UND_ERR_DESTROYED', 'per call'],
    ['close', 'UND_ERR_CLOSED', 'per call'],
  ] as const)(
    '%s() ends the wait within a second, with undici’s %s, sending nothing more (%s)',
    async (method, code, where) => {
      const { url, requests } = await busy()
      const agent = new Agent()
      // Nothing moves this clock but the test: the 30 s wait ends by the Agent or never.
      const clock = new ManualClock()
      const fetch = createFetch({
        retry: { statuses: [503] },
        clock,
        ...(where === 'factory' ? { dispatcher: agent } : {}),
      })
      const retried = nextRetry()
      const call = fetch(url, where === 'per call' ? { dispatcher: agent } : {}).then(
        () => 'answered',
        (error: unknown) => error,
      )
      expect(await retried).toMatchObject({ reason: 'HTTP_503', delayMs: 30_000 })
      await agent[method]()
      clock.advance(1000)
      const settled = await Promise.race([call, turns(1000).then(() => 'still waiting to retry')])
      expect(settled).toMatchObject({ code })
      expect(requests()).toBe(1)
      await fetch.close()
    },
  )

  it('a 503 answered after close() is the answer, not waited on: the retry could only fail', async () => {
    const { url, requests, arrived, release } = await busy(true)
    const agent = new Agent()
    const fetch = createFetch({
      retry: { statuses: [503] },
      clock: new ManualClock(),
      dispatcher: agent,
    })
    const events = recordEgress()
    const call = fetch(url).then(
      async (res) => `${res.status} ${await res.text()}`,
      (error: unknown) => error,
    )
    await arrived
    // undici's close lets the request in flight finish.
    const closed = agent.close()
    release()
    const settled = await Promise.race([call, turns(1000).then(() => 'still waiting to retry')])
    events.stop()
    expect(settled).toBe('503 busy')
    expect(requests()).toBe(1)
    expect(events.retries).toEqual([])
    expect(events.skipped).toMatchObject([{ reason: 'HTTP_503', why: 'aborted' }])
    await closed
  })
})

describe('the look at your dispatcher during a wait', () => {
  it('stops with the wait, on a clock whose setTimeout gives no handle to clear (it went on every second after the call ended)', async () => {
    const server = await busy()
    const manual = new ManualClock()
    let looks = 0
    // A clock of the caller's that returns no handle, as core's Clock allows.
    const clock = {
      now: () => manual.now(),
      setTimeout: (fn: () => void, ms: number) => {
        if (ms === 1000) looks++
        manual.setTimeout(fn, ms)
        return undefined
      },
      clearTimeout: () => {},
    }
    const agent = new Agent()
    const fetch = createFetch({
      retry: { statuses: [503] },
      clock,
      dispatcher: agent,
    })
    try {
      const retried = nextRetry()
      const call = fetch(server.url).then((res) => res.status)
      await retried
      for (let i = 0; i < 1000 && looks === 0; i++) await turns(1)
      // The wait's 30 s: one look a second while it lasts.
      for (let s = 0; s < 30; s++) {
        manual.advance(1000)
        await turns(2)
      }
      expect(await call).toBe(503)
      expect(server.requests()).toBe(2)
      const after = looks
      for (let s = 0; s < 10; s++) {
        manual.advance(1000)
        await turns(2)
      }
      expect(looks).toBe(after)
    } finally {
      await fetch.close()
      await agent.close()
    }
  })

  it('is not made for a dispatcher that never says it closed (a MockAgent): the wait has its own timer alone', async () => {
    const { MockAgent } = await import('undici')
    const mock = new MockAgent()
    mock.disableNetConnect()
    mock
      .get('http://mocked.test')
      .intercept({ path: '/' })
      .reply(503, 'busy', { headers: { 'retry-after': '30' } })
      .times(2)
    const clock = new ManualClock()
    const fetch = createFetch({
      retry: { statuses: [503] },
      clock,
      dispatcher: mock,
    })
    try {
      const retried = nextRetry()
      const call = fetch('http://mocked.test/').then((res) => res.status)
      await retried
      for (let i = 0; i < 1000 && clock.pendingTimers === 0; i++) await turns(1)
      expect(clock.pendingTimers).toBe(1)
      clock.advance(30_001)
      expect(await call).toBe(503)
    } finally {
      await fetch.close()
      await mock.close()
    }
  })
})
