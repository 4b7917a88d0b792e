import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import {
  type ConnectorOptions,
  createConnector,
  createFetch,
  deadlineInterceptor,
  type LookupFunction,
} from '../src/index.js'
import { rejection } from './helpers.js'
import { blackhole } from './support/blackhole.js'

// undici's Agent takes `autoSelectFamily` / `autoSelectFamilyAttemptTimeout`
// for its own connector, and hands a connector function neither: under
// createConnector they were lost (and the connector refused them as unknown
// options). A name with several addresses was always tried with Node's
// 250 ms per address, so under a `connectTimeoutMs` of 200 a first address
// that never answers took the whole budget and the second was never tried.
// The connector now takes both (`autoSelectFamilyAttemptTimeoutMs`, in this
// package's words) and gives one address at most half the connect's budget.
//
// These tests go through the connector's own turn-taking (with a
// `localAddress`, where Node turns Happy Eyeballs off), whose per-address
// wait runs on the injected clock: no ms are waited. 127.0.0.2 stands in for
// a dead address (a listener that accepts nothing: support/blackhole.ts),
// 127.0.0.1 answers; Node's own Happy Eyeballs, on real timers, is in
// autoSelectFamilyShortBudget.timing.test.ts.

let closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.map((close) => close()))
  closers = []
})

async function serve(): Promise<{ port: number; connections: () => number }> {
  const server = createServer((_req, res) => res.end('ok'))
  let connections = 0
  server.on('connection', () => connections++)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push(async () => {
    server.closeAllConnections()
    server.close()
  })
  return { port: (server.address() as AddressInfo).port, connections: () => connections }
}

async function deadFirst(): Promise<{ port: number; connections: () => number }> {
  const live = await serve()
  const dead = await blackhole('127.0.0.2', live.port)
  closers.push(() => dead.close())
  return live
}

/** A lookup that answers `addresses` and counts its calls. */
function answering(...addresses: string[]): LookupFunction & { calls: number } {
  const lookup = ((_name, _options, callback) => {
    lookup.calls++
    callback(
      null,
      addresses.map((address) => ({ address, family: 4 })),
    )
  }) as LookupFunction & { calls: number }
  lookup.calls = 0
  return lookup
}

function agentWith(options: ConnectorOptions, localAddress?: string): Agent {
  const agent = new Agent({
    connect: createConnector(options),
    ...(localAddress ? { localAddress } : {}),
  })
  closers.push(() => agent.destroy())
  return agent
}

/** A ManualClock that keeps the delay of every timer set on it. */
function recordingClock(): ManualClock & { delays: number[] } {
  const clock = Object.assign(new ManualClock(), { delays: [] as number[] })
  const setTimer = clock.setTimeout.bind(clock)
  clock.setTimeout = (callback: () => void, ms: number) => {
    clock.delays.push(ms)
    return setTimer(callback, ms)
  }
  return clock
}

/**
 * Connects through `options` from 127.0.0.5, the first address dead: the
 * last timer set once the first address is being tried is the wait before
 * the next (`attemptMs`), and advancing the clock by it reaches the second.
 */
async function connectsAfter(options: ConnectorOptions, attemptMs: number): Promise<void> {
  const { port, connections } = await deadFirst()
  const clock = recordingClock()
  const lookup = answering('127.0.0.2', '127.0.0.1')
  const agent = agentWith({ lookup, clock, ...options }, '127.0.0.5')
  const answered = request(`http://svc.test:${port}/`, { dispatcher: agent })
  answered.catch(() => {})
  await expect.poll(() => lookup.calls).toBe(1)
  expect(clock.delays.at(-1)).toBe(attemptMs)
  clock.advance(attemptMs)
  // The second address answers once the first is given up. Polled for the
  // config's 10 s, not 2 s: a loopback connect, but in real time, which a
  // worker on a loaded box can be kept from for seconds; one never tried
  // still fails the poll.
  await expect.poll(connections).toBe(1)
  const res = await answered
  expect(await res.body.text()).toBe('ok')
}

it('under a short connect limit, the first address is given up at half of it, and the second connects', async () => {
  // Node's 250 ms per address is more than the 200 ms limit: before, the
  // connect timed out on 127.0.0.2 and 127.0.0.1 was never tried.
  await connectsAfter({ connectTimeoutMs: 200 }, 100)
})

it('autoSelectFamilyAttemptTimeoutMs is how long one address is given', async () => {
  // Before: refused as an unknown option (undici's own name is refused too).
  await connectsAfter({ autoSelectFamilyAttemptTimeoutMs: 30 }, 30)
})

it('autoSelectFamilyAttemptTimeoutMs: 0 is no limit of its own; half the connect limit still applies', async () => {
  await connectsAfter({ autoSelectFamilyAttemptTimeoutMs: 0, connectTimeoutMs: 400 }, 200)
})

it('a wait shorter than 10 ms is 10 ms, Node’s floor', async () => {
  const { port } = await deadFirst()
  const clock = recordingClock()
  const lookup = answering('127.0.0.2', '127.0.0.1')
  const agent = agentWith(
    { lookup, clock, autoSelectFamilyAttemptTimeoutMs: 1, connectTimeoutMs: 0, dnsTimeoutMs: 0 },
    '127.0.0.5',
  )
  const answered = request(`http://svc.test:${port}/`, { dispatcher: agent })
  answered.catch(() => {})
  await expect.poll(() => lookup.calls).toBe(1)
  // No phase limit: the one timer is the wait before the next address.
  expect(clock.delays).toEqual([10])
  clock.advance(10)
  expect(await (await answered).body.text()).toBe('ok')
})

it('autoSelectFamily: false connects to the first address alone, as net.connect does', async () => {
  // 127.0.0.2 refuses here (nothing listens on it): before, 127.0.0.1 was tried next.
  const { port, connections } = await serve()
  for (const localAddress of [undefined, '127.0.0.5']) {
    const agent = agentWith(
      { lookup: answering('127.0.0.2', '127.0.0.1'), autoSelectFamily: false },
      localAddress,
    )
    const error = await rejection(request(`http://svc.test:${port}/`, { dispatcher: agent }))
    expect(error, String(localAddress)).toMatchObject({
      code: 'CONNECT_FAILED',
      osCode: 'ECONNREFUSED',
    })
    expect(((error as Error).cause as { address?: string }).address).toBe('127.0.0.2')
  }
  expect(connections()).toBe(0)
  // With it on (the default), the second address is tried.
  const agent = agentWith({ lookup: answering('127.0.0.2', '127.0.0.1'), autoSelectFamily: true })
  const res = await request(`http://svc.test:${port}/`, { dispatcher: agent })
  expect(await res.body.text()).toBe('ok')
})

it('both options are checked, and taken by every factory (one options object serves all)', () => {
  for (const make of [createConnector, deadlineInterceptor, createFetch] as ((
    o: object,
  ) => unknown)[]) {
    expect(() => make({ autoSelectFamily: 'yes' })).toThrow(
      "autoSelectFamily must be true or false, got 'yes' (a string)",
    )
    expect(() => make({ autoSelectFamilyAttemptTimeoutMs: -1 })).toThrow(RangeError)
    expect(() => make({ autoSelectFamilyAttemptTimeoutMs: Number.NaN })).toThrow(
      'autoSelectFamilyAttemptTimeoutMs must be a finite number ≥ 0 (ms), got NaN',
    )
    expect(() => make({ autoSelectFamilyAttemptTimeoutMs: '100' })).toThrow(TypeError)
    // undici's name is pointed at ours.
    expect(() => make({ autoSelectFamilyAttemptTimeout: 100 })).toThrow(
      /did you mean autoSelectFamilyAttemptTimeoutMs/,
    )
    const made = make({
      autoSelectFamily: false,
      autoSelectFamilyAttemptTimeoutMs: 100,
    }) as { close?: () => Promise<void> }
    if (made.close) closers.push(made.close)
    const defaults = make({ autoSelectFamily: null, autoSelectFamilyAttemptTimeoutMs: null }) as {
      close?: () => Promise<void>
    }
    if (defaults.close) closers.push(defaults.close)
  }
})
