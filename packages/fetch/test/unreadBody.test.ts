import { getEventListeners } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { setImmediate as tick } from 'node:timers/promises'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { ClientClosedError, Deadline } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { createFetch, type EgressAttemptEndMessage } from '../src/index.js'
import { CountingClock, recordEgress, rejection } from './helpers.js'

// A handler that looks at the status and never reads or cancels the body
// (`const r = await fetch(url); res.json({ s: r.status })`). undici's
// rule: a body must be read or cancelled, else its connection is held (not
// reused) until the Response is garbage-collected, when undici's fetch
// cancels the body itself. createFetch held every Response it returned from
// the attempt, which the connection holds while the body is open, so that
// never happened: the socket, the attempt and its listener on the caller's
// signal stayed for the life of the process, and `attempt-end` was never
// published (an egress span that never ended) — where the deadline was
// disposed first, as express disposes the request's at its end, or there was
// none. A deadline that ends still stops it at once.

/** 256 KB: far more than arrives with the headers, so undici stops reading and the body stays open unread. */
const BODY = 'x'.repeat(256 * 1024)

interface Upstream {
  url: string
  sockets: Socket[]
  /** Resolves when the server's `n`-th socket (from 0) has closed. */
  closed(n: number): Promise<void>
}

const open: Array<() => Promise<unknown>> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()))
})

async function upstream(status = 503): Promise<Upstream> {
  const sockets: Socket[] = []
  const server: Server = createServer((req, res) => {
    // 200 for the follow-up call that checks the origin still answers.
    const code = req.url === '/next' ? 200 : status
    res.writeHead(code, { 'content-length': BODY.length })
    res.end(BODY)
  })
  server.on('connection', (socket) => sockets.push(socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  open.push(() => {
    server.closeAllConnections()
    return new Promise((resolve) => server.close(resolve))
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/big`,
    sockets,
    closed: (n) =>
      new Promise((resolve) => {
        const socket = sockets[n]
        if (!socket || socket.destroyed) resolve()
        else socket.once('close', () => resolve())
      }),
  }
}

/**
 * The egress events of `up`'s calls only: a Response another file of this
 * worker left unread may be collected during this file's collections, and
 * its attempt end then.
 */
function record(up: Upstream) {
  const egress = recordEgress()
  open.push(async () => egress.stop())
  const origin = `${new URL(up.url).origin}/`
  return {
    ends: () => egress.ends.filter((m) => m.url.startsWith(origin)),
    skipped: () => egress.skipped.filter((m) => m.url.startsWith(origin)),
  }
}

function fetcher(clock: CountingClock) {
  const fetch = createFetch({ clock })
  // Destroyed, not closed: a body left unread (a failing run) pauses its
  // socket, which then never hears the upstream go, and close() waits for it.
  open.push(() => fetch.dispatcher.destroy())
  return fetch
}

/**
 * A full collection, in a worker not started with --expose-gc (as
 * packages/core/test/support/collectGarbage.ts does): the flag exposes `gc`
 * to contexts made after it is set, and is unset at once.
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  setFlagsFromString('--no-expose-gc')
  gc()
}

/**
 * Collect until the attempt's end is published: undici's FinalizationRegistry
 * runs its callback in a task after the collection that found the Response.
 * Gives up after 20 collections (the assertion after it then fails).
 */
async function collectUntilEnded(ends: () => EgressAttemptEndMessage[]): Promise<void> {
  for (let round = 0; round < 20 && ends().length === 0; round++) {
    await tick()
    collectGarbage()
    for (let turn = 0; turn < 5 && ends().length === 0; turn++) await tick()
  }
}

describe('a Response whose body is never read or cancelled', () => {
  it('a deadline that ends while the body is unread stops the attempt at once (no collection needed)', async () => {
    // Already so before: the attempt listens to its deadline until it ends.
    const up = await upstream(503)
    const clock = new CountingClock()
    const fetch = fetcher(clock)
    const egress = record(up)
    const deadline = Deadline.after(60_000, { clock })

    const res = await fetch(up.url, { deadline })
    expect(res.status).toBe(503)
    const reason = new ClientClosedError()
    deadline.cancel(reason)

    await up.closed(0)
    expect(egress.ends()).toHaveLength(1)
    expect(egress.ends()[0]).toMatchObject({
      statusCode: 503,
      errorCode: 'CLIENT_CLOSED',
      phase: 'body',
    })
    expect(clock.pending).toBe(0)
    // Read after the end: the read fails with the deadline's reason.
    expect(await rejection(res.text())).toBe(reason)
  })

  it('a deadline disposed while the Response is still held does not cut the body: work left running reads it whole', async () => {
    // express disposes the request's deadline at its end, and documents that
    // work a handler leaves running after answering is not aborted.
    const up = await upstream(200)
    const clock = new CountingClock()
    const fetch = fetcher(clock)
    const egress = record(up)
    const deadline = Deadline.after(60_000, { clock })

    const res = await fetch(up.url, { deadline })
    deadline.dispose()
    await tick()
    collectGarbage()
    await tick()
    expect(egress.ends()).toHaveLength(0) // still open: the Response is held, its body unread

    expect(await res.text()).toHaveLength(BODY.length)
    expect(egress.ends()).toHaveLength(1)
    expect(egress.ends()[0]).toMatchObject({
      statusCode: 200,
      errorCode: undefined,
      phase: undefined,
    })
    expect(clock.pending).toBe(0)
    // A body read to its end leaves its connection to be reused (undici
    // puts it back in the pool a turn after the body's end is handed over).
    await tick()
    expect(await (await fetch(up.url)).text()).toHaveLength(BODY.length)
    expect(up.sockets).toHaveLength(1)
  })

  it.each([
    ['a deadline disposed at the end of the request (express)', true],
    ['no deadline at all', false],
  ])(
    '%s: once the Response is collected its attempt ends BODY_NOT_READ, the socket is closed and nothing is left behind',
    async (_, withDeadline) => {
      const up = await upstream(503)
      const clock = new CountingClock()
      const fetch = fetcher(clock)
      const egress = record(up)
      // A process-wide signal given to every call (a shutdown signal): each
      // call's attempt listens to it until the attempt ends.
      const shutdown = new AbortController()

      // The handler: looks at the status only, and its request ends.
      const statusOnly = async (): Promise<number> => {
        const deadline = withDeadline ? Deadline.after(60_000, { clock }) : undefined
        const signal = shutdown.signal
        const res = await fetch(up.url, deadline ? { deadline, signal } : { signal })
        deadline?.dispose()
        return res.status
      }
      expect(await statusOnly()).toBe(503)

      await collectUntilEnded(egress.ends)

      expect(egress.ends()).toHaveLength(1)
      expect(egress.ends()[0]).toMatchObject({
        statusCode: 503,
        errorCode: 'BODY_NOT_READ',
        phase: 'body',
      })
      expect(egress.ends()[0]?.bytesReceived).toBeGreaterThan(0)
      expect(egress.ends()[0]?.bytesReceived).toBeLessThan(BODY.length)
      // Nobody wanted the body: no retry was skipped for it (the 503's own
      // `not-retryable` came with the answer).
      expect(egress.skipped().map((m) => m.why)).toEqual(['not-retryable'])
      // The unread connection is closed (it cannot be reused) …
      await up.closed(0)
      expect(up.sockets[0]?.destroyed).toBe(true)
      // … and the attempt let go of the caller's signal and every timer.
      expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0)
      expect(clock.pending).toBe(0)

      // The origin still answers, on a connection of its own.
      const next = await fetch(up.url.replace('/big', '/next'))
      expect(await next.text()).toHaveLength(BODY.length)
    },
    5000,
  )
})
