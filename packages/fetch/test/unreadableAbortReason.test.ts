import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { Deadline, messageOf, runWithDeadline } from '@hourglass/core'
import { Agent, pipeline, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { unreadableValues } from '../../../test/support/unreadableValues.js'
import { createFetch, deadlineInterceptor } from '../src/index.js'
import { recordEgress } from './helpers.js'

/**
 * A deadline follows its caller's AbortController (`Deadline.after(ms, {
 * signal })`), and a caller aborts with any value. Reasons whose message
 * cannot be read (`String()` of an object with no prototype throws, so does
 * any look at a revoked Proxy, `instanceof` included) threw out of the
 * attempt's abort listener: the fetch rejected but the process saw an
 * uncaught TypeError, and with a revoked Proxy the fetch never settled (the
 * listeners after the throwing one, which stop undici's fetch, never ran).
 */
const unreadable = unreadableValues
const reasons = Object.keys(unreadable)

let server: Server
let url: string
const fetch = createFetch()
/** Asks for a name and never hears back: a call through it waits for its connection. */
let lookupAsked: () => void = () => {}
const heldFetch = createFetch({ lookup: (() => lookupAsked()) as never })
const agent = new Agent()
const dispatcher = agent.compose(deadlineInterceptor())

beforeAll(async () => {
  // Never answers; on /body, answers with the start of a body and holds the rest.
  server = createServer((req, res) => {
    if (req.url !== '/body') return
    res.writeHead(200)
    res.write('x')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
})
afterAll(async () => {
  await fetch.close()
  await heldFetch.close()
  await agent.close()
  server.closeAllConnections()
  server.close()
})

/**
 * 'the reason' when `call` rejected with it; else what it did, readable:
 * vitest's own failure message reads the values compared, and throws on
 * these. Boxed: a promise resolved with a revoked Proxy reads its `then`.
 */
async function outcome(call: Promise<unknown>, reason: unknown): Promise<string> {
  const got = await call.then(
    () => ({ resolved: true, error: undefined }),
    (error: unknown) => ({ resolved: false, error }),
  )
  if (got.resolved) return 'resolved'
  if (got.error === reason) return 'the reason'
  if (got.error instanceof Error && got.error.cause === reason) return 'an Error caused by it'
  return `${typeof got.error}: ${messageOf(got.error)}`
}

/**
 * What the interceptor's calls reject with: undici destroys a Node stream
 * with the error (the answer's body; before it, a stream request body or
 * pipeline's Duplex), and Node reads its `stack`, which throws for the
 * getter's Error and the revoked Proxy: those come as an Error with the
 * reason as its cause.
 */
const throughStreams = (name: string) =>
  name === 'an object with no prototype' ? 'the reason' : 'an Error caused by it'

/**
 * Runs `call` under a deadline that follows a controller; aborts it with
 * `reason` once the request has reached the server (or `started` resolves).
 */
async function abortedInFlight(
  reason: unknown,
  call: (controller: AbortController) => Promise<unknown>,
  started: Promise<unknown> = once(server, 'request'),
): Promise<string> {
  const controller = new AbortController()
  const deadline = Deadline.after(60_000, { signal: controller.signal })
  const events = recordEgress()
  try {
    const pending = outcome(
      runWithDeadline(deadline, () => call(controller)),
      reason,
    )
    await started
    controller.abort(reason)
    return await pending
  } finally {
    events.stop()
    deadline.dispose()
  }
}

describe('a deadline cancelled with a reason whose message cannot be read: the call rejects with it, nothing thrown, nothing left hanging', () => {
  it.each(reasons)('createFetch, in flight (%s)', async (name) => {
    const reason = unreadable[name]!()
    expect(await abortedInFlight(reason, () => fetch(url))).toBe('the reason')
  })

  it.each(reasons)("createFetch, the caller's own signal (%s)", async (name) => {
    const reason = unreadable[name]!()
    const got = await abortedInFlight(reason, (controller) =>
      fetch(url, { signal: controller.signal, deadline: Deadline.after(60_000) }),
    )
    expect(got).toBe('the reason')
  })

  it.each(reasons)('createFetch, cancelled before it is sent (%s)', async (name) => {
    const reason = unreadable[name]!()
    const controller = new AbortController()
    controller.abort(reason)
    const deadline = Deadline.after(60_000, { signal: controller.signal })
    expect(await outcome(fetch(url, { deadline }), reason)).toBe('the reason')
  })

  it.each(reasons)('createFetch, while its connection is made (%s)', async (name) => {
    const reason = unreadable[name]!()
    const asked = new Promise<void>((resolve) => {
      lookupAsked = resolve
    })
    const got = await abortedInFlight(reason, () => heldFetch('http://held.test/'), asked)
    expect(got).toBe('the reason')
  })

  it.each(reasons)('deadlineInterceptor under undici.request, in flight (%s)', async (name) => {
    const reason = unreadable[name]!()
    expect(await abortedInFlight(reason, () => request(url, { dispatcher }))).toBe(
      throughStreams(name),
    )
  })

  it.each(reasons)(
    'deadlineInterceptor under undici.request with a stream request body, in flight (%s)',
    async (name) => {
      const reason = unreadable[name]!()
      const body = new Readable({ read() {} })
      body.push('a')
      const got = await abortedInFlight(reason, () =>
        request(url, { dispatcher, method: 'POST', body }),
      )
      // Before, it also threw, uncaught, out of undici's destroy of `body`.
      expect(got).toBe(throughStreams(name))
      expect(body.destroyed).toBe(true)
    },
  )

  it.each(reasons)('deadlineInterceptor under undici.pipeline, in flight (%s)', async (name) => {
    const reason = unreadable[name]!()
    const got = await abortedInFlight(
      reason,
      () =>
        new Promise((resolve, reject) => {
          const duplex = pipeline(url, { dispatcher, method: 'GET' }, ({ body }) => body)
          duplex.on('error', reject)
          // Before, the Duplex closed without an error for the getter's
          // Error, and never closed for the revoked Proxy (the Agent held).
          duplex.on('close', () => resolve('closed without an error'))
          duplex.end()
          duplex.resume()
        }),
    )
    expect(got).toBe(throughStreams(name))
  })

  it.each(reasons)('createFetch, while its body is read (%s)', async (name) => {
    const reason = unreadable[name]!()
    const controller = new AbortController()
    const deadline = Deadline.after(60_000, { signal: controller.signal })
    const response = await fetch(`${url}body`, { deadline })
    const reader = response.body!.getReader()
    await reader.read()
    const read = outcome(reader.read(), reason)
    controller.abort(reason)
    expect(await read).toBe('the reason')
    deadline.dispose()
  })

  it.each(reasons)(
    'deadlineInterceptor under undici.request, while its body is read (%s)',
    async (name) => {
      const reason = unreadable[name]!()
      const controller = new AbortController()
      const deadline = Deadline.after(60_000, { signal: controller.signal })
      const { body } = await request(`${url}body`, { dispatcher, deadline } as never)
      const chunks = body[Symbol.asyncIterator]()
      await chunks.next()
      const read = chunks.next().then(
        () => 'resolved',
        // A Node stream cannot be destroyed with such a value (it reads its
        // `stack`): the body fails with an Error that has it as its cause.
        (error: unknown) =>
          error === reason
            ? 'the reason'
            : error instanceof Error && error.cause === reason
              ? 'an Error caused by it'
              : messageOf(error),
      )
      controller.abort(reason)
      expect(await read).toBe(throughStreams(name))
      deadline.dispose()
    },
  )
})
