import { createRequire } from 'node:module'
import { Deadline } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type BodyTimeoutError,
  createConnector,
  createFetch,
  deadlineInterceptor,
  type HeadersTimeoutError,
  isBodyTimeout,
  isHeadersTimeout,
} from '../src/index.js'
import { rejection } from './helpers.js'

// A `headersTimeout` / `bodyTimeout` set on the undici Agent itself had no
// effect under Hourglass: every dispatch carried its own value (0, our
// phase timers replacing undici's), and undici takes a per-request value
// over its Agent's, so `new Agent({ headersTimeout: 50 })` waited out our
// 10 s (or the deadline) instead. A dispatch now carries none unless its
// caller gave one: the Agent's limit applies beside ours, the shorter wins.
//
// undici runs those timers on its own coarse clock (ticks of ~0.5 s), so a
// 50 ms limit fires after 0.5–1 s of real time. undici's test hook `tick`
// moves that clock instead (its own tests do the same): each test waits
// until the server holds the request (the timer is armed by then), then
// ticks past the Agent's limit. Nothing waits in real time; the deadline
// (1 s, real) is what would have ended the call before the fix.

const undiciTimers = createRequire(import.meta.url)('undici/lib/util/timers.js') as {
  tick(ms?: number): void
}

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  closers.push(server)
  return server
}

function agent(options: ConstructorParameters<typeof Agent>[0]): Agent {
  const made = new Agent(options)
  closers.push(made)
  return made
}

describe("an undici Agent's own headersTimeout and bodyTimeout", () => {
  it('createFetch({ dispatcher }): an Agent headersTimeout shorter than ours ends the call with HEADERS_TIMEOUT', async () => {
    const server = await serve({ type: 'hang' })
    const fetch = createFetch({ dispatcher: agent({ headersTimeout: 50 }), retry: false })
    // A real deadline that must not run out while the call connects and is
    // sent (undici's timers are ticked by hand, the deadline's are not): 5 s,
    // still under our own 10 s headers limit.
    using deadline = Deadline.after(5000)
    const call = rejection(fetch(server.url, { deadline }))
    await server.request(0)
    undiciTimers.tick(50)
    const error = (await call) as HeadersTimeoutError
    expect(isHeadersTimeout(error), String(error)).toBe(true)
    expect(error.phase).toBe('headers')
    expect(error.bytesReceived).toBe(0)
    // Ended by the Agent's limit, not by the deadline nor our 10 s.
    expect(deadline.expired).toBe(false)
  })

  it('deadlineInterceptor() on an Agent with a headersTimeout: the same', async () => {
    const server = await serve({ type: 'hang' })
    const options = { retry: false } as const
    const dispatcher = agent({ connect: createConnector(options), headersTimeout: 50 }).compose(
      deadlineInterceptor(options),
    )
    using deadline = Deadline.after(5000)
    const call = rejection(request(server.url, { dispatcher, deadline } as never))
    await server.request(0)
    undiciTimers.tick(50)
    const error = (await call) as HeadersTimeoutError
    expect(isHeadersTimeout(error), String(error)).toBe(true)
    expect(deadline.expired).toBe(false)
  })

  it('deadlineInterceptor() on an Agent with a bodyTimeout: a silent body ends with BODY_TIMEOUT', async () => {
    const server = await serve({ type: 'headers-then-stall' })
    const options = { retry: false } as const
    const dispatcher = agent({ connect: createConnector(options), bodyTimeout: 50 }).compose(
      deadlineInterceptor(options),
    )
    using deadline = Deadline.after(5000)
    const res = await request(server.url, { dispatcher, deadline } as never)
    const read = rejection(res.body.text())
    undiciTimers.tick(50)
    const error = (await read) as BodyTimeoutError
    expect(isBodyTimeout(error), String(error)).toBe(true)
    expect(deadline.expired).toBe(false)
  })

  it('createFetch({ dispatcher }) on an Agent with a bodyTimeout: the body read fails with BODY_TIMEOUT', async () => {
    const server = await serve({ type: 'headers-then-stall' })
    const fetch = createFetch({ dispatcher: agent({ bodyTimeout: 50 }), retry: false })
    using deadline = Deadline.after(5000)
    const res = await fetch(server.url, { deadline })
    const read = rejection(res.text())
    undiciTimers.tick(50)
    // The typed error itself, as when our own bodyTimeoutMs fires: not
    // fetch's `TypeError: terminated` around it.
    const error = (await read) as BodyTimeoutError
    expect(isBodyTimeout(error), String(error)).toBe(true)
    expect(error.phase).toBe('body')
    expect(deadline.expired).toBe(false)
  })
})

describe("createFetch's own Agent", () => {
  it("has no header timer of undici's (its default is 300 s): with headersTimeoutMs 0 and no deadline, nothing ends the call but the caller", async () => {
    // What lets the gateway's and llm's `headersTimeoutMs: 600_000` mean 10
    // minutes. Moving undici's clock 300 s on ends nothing; the caller's
    // abort then does, with its own reason.
    const server = await serve({ type: 'hang' })
    const fetch = createFetch({ headersTimeoutMs: 0, retry: false })
    closers.push(fetch)
    const caller = new AbortController()
    const call = rejection(fetch(server.url, { signal: caller.signal }))
    await server.request(0)
    // The first tick starts undici's timers (a new one waits for a tick to
    // count from), the second moves them 300 s on.
    undiciTimers.tick(0)
    undiciTimers.tick(300_000)
    // Had a timer of undici's fired, it destroyed the socket at once: the
    // socket's close callback runs in the loop's close phase, after this
    // turn's immediates, and reaches the handler by the next turn's.
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve))
    caller.abort(new Error('caller left'))
    expect(String(await call)).toBe('Error: caller left')
  })
})
