import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { Client, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor, fetchChannels } from '../src/index.js'
import { rejection } from './helpers.js'

// An undici `Client` (one connection) queues a second request behind the
// connect the first one started. When that first request's own deadline
// ended, or its caller aborted, while the name was still being looked up,
// the connector gave up the connect with that request's reason — and undici
// fails every request queued on a connect that fails: the second request,
// with seconds of its own budget left, failed with the first one's
// DEADLINE_EXCEEDED (or a CONNECT_FAILED "This operation was aborted").
// undici's own connector keeps connecting for the requests still queued.
// The lookup here answers only when the test releases it.

let server: Server | undefined
afterEach(async () => {
  if (server) {
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

async function answering(): Promise<number> {
  server = createServer((req, res) => res.end(`ok ${req.url}`))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return (server.address() as AddressInfo).port
}

type Answer = (error: null, addresses: { address: string; family: number }[]) => void
const LOCAL = [{ address: '127.0.0.1', family: 4 }]

/**
 * A lookup that holds its answers (127.0.0.1) until `release()`, and
 * answers at once from then on: undici connects again for the queued
 * request once it has aborted the first one on the new connection (as it
 * does without Hourglass for a request aborted before its connection).
 */
function heldLookup() {
  let started: () => void = () => {}
  const asked = new Promise<void>((resolve) => {
    started = resolve
  })
  const held: Answer[] = []
  let released = false
  return {
    asked,
    lookup: (_host: string, _options: unknown, callback: Answer) => {
      if (released) return callback(null, LOCAL)
      held.push(callback)
      started()
    },
    release: () => {
      released = true
      for (const answer of held.splice(0)) answer(null, LOCAL)
    },
  }
}

/** Resolves once an attempt to `path` has been dispatched. */
function dispatched(path: string): Promise<void> {
  return new Promise((resolve) => {
    const seen = (message: { url: string }) => {
      if (!message.url.endsWith(path)) return
      fetchChannels.attempt.unsubscribe(seen)
      resolve()
    }
    fetchChannels.attempt.subscribe(seen)
  })
}

it("a request queued on a Client's connect is sent when the request that started it hits its deadline", async () => {
  const port = await answering()
  const clock = new ManualClock()
  const held = heldLookup()
  const options = { lookup: held.lookup as never, clock, retry: false as const }
  const origin = `http://slow-name.test:${port}`
  const client = new Client(origin, { connect: createConnector(options) })
  const dispatcher = client.compose(deadlineInterceptor(options))

  const first = rejection(
    request(`${origin}/first`, { dispatcher, deadline: Deadline.after(100, { clock }) } as never),
  )
  await held.asked
  const second = request(`${origin}/second`, {
    dispatcher,
    deadline: Deadline.after(60_000, { clock }),
  } as never)
  clock.advance(100)
  expect(isDeadlineExceeded(await first)).toBe(true)

  held.release()
  const answer = await second
  expect(answer.statusCode).toBe(200)
  expect(await answer.body.text()).toBe('ok /second')
  await client.close()
})

it("a request queued on a Client's connect is sent when the caller of the one that started it aborts", async () => {
  const port = await answering()
  const held = heldLookup()
  const options = { lookup: held.lookup as never, retry: false as const }
  const origin = `http://slow-name.test:${port}`
  const client = new Client(origin, { connect: createConnector(options) })
  // Its lookup is the Client's connector's: createFetch refuses one beside a dispatcher.
  const fetch = createFetch({ retry: false, dispatcher: client })
  const caller = new AbortController()
  const reason = new Error('caller gave up')

  const first = rejection(fetch(`${origin}/first`, { signal: caller.signal }))
  await held.asked
  const queued = dispatched('/second')
  const second = fetch(`${origin}/second`)
  await queued
  caller.abort(reason)
  expect(await first).toBe(reason)

  held.release()
  const answer = await second
  expect(answer.status).toBe(200)
  expect(await answer.text()).toBe('ok /second')
  await client.close()
})

it('alone on its connect, a request whose caller aborts still ends the lookup: nothing is connected for nobody', async () => {
  const port = await answering()
  const held = heldLookup()
  let connections = 0
  server!.on('connection', () => connections++)
  const options = { lookup: held.lookup as never, retry: false as const }
  const origin = `http://slow-name.test:${port}`
  const client = new Client(origin, { connect: createConnector(options) })
  const dispatcher = client.compose(deadlineInterceptor(options))
  const caller = new AbortController()

  const first = rejection(request(`${origin}/first`, { dispatcher, signal: caller.signal }))
  await held.asked
  caller.abort(new Error('caller gave up'))
  await first
  held.release()
  await client.close()
  expect(connections).toBe(0)
})
