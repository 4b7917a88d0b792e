import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { Deadline } from '@hourglass/core'
import { Agent } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

// fetch follows a redirect without reading the redirect's body, and without
// ending its request (nodejs/undici#5728): a body longer than what fits in
// the stream's buffer (~64 KB) stopped the socket for good. createFetch
// sees every hop, so it ends the hop fetch has left behind: that hop's
// attempt ends with its status (its own `attempt-end`, as a retried
// status's does), and its request is aborted, closing the connection.
// Before, the 302's `attempt-end` never came (no deadline to end it), the
// socket stayed open and `fetch.close()` waited on it for ever; with one
// connection per origin the redirect's target waited behind it until the
// deadline. No test here measures time: each would time out before.

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

/** A server whose `/big` answers `status` to `/target` with a 1 MB body; returns its URL and the sockets of `/big`. */
async function redirectingServer(
  status = 302,
  location = '/target',
): Promise<{ url: string; bigSockets: Socket[] }> {
  const bigSockets: Socket[] = []
  const listener: RequestListener = (req, res) => {
    if (req.url === '/big') {
      bigSockets.push(req.socket)
      res.writeHead(status, { location })
      res.end(Buffer.alloc(1 << 20))
      return
    }
    res.end('target')
  }
  const server = createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push({
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bigSockets }
}

async function closed(socket: Socket | undefined): Promise<void> {
  expect(socket).toBeDefined()
  // 'close' alone: the client's abort may reach the server as a reset (an 'error' first).
  if (!socket!.destroyed) await new Promise((resolve) => socket!.once('close', resolve))
}

it("a followed redirect's long body ends its hop: its attempt-end, its connection closed", async () => {
  const { url, bigSockets } = await redirectingServer()
  const fetch = createFetch()
  closers.push(fetch)
  events = recordEgress()
  const res = await fetch(`${url}/big`)
  expect(await res.text()).toBe('target')

  await closed(bigSockets[0]) // never, before
  await fetch.close() // never resolved, before
  expect(
    events.ends.map(({ redirect, statusCode, errorCode, phase }) => ({
      redirect,
      statusCode,
      errorCode,
      phase,
    })),
  ).toEqual([
    { redirect: undefined, statusCode: 302, errorCode: undefined, phase: undefined },
    { redirect: 1, statusCode: 200, errorCode: undefined, phase: undefined },
  ])
}, 5000)

it('with one connection per origin, the target is reached at once (not after the deadline)', async () => {
  const { url } = await redirectingServer(301)
  const agent = new Agent({ connections: 1, headersTimeout: 0, bodyTimeout: 0 })
  closers.push({ close: () => agent.destroy() })
  const fetch = createFetch({ dispatcher: agent })
  using deadline = Deadline.after(60_000)
  const res = await fetch(`${url}/big`, { deadline }) // DEADLINE_EXCEEDED, before
  expect(await res.text()).toBe('target')
}, 5000)

it("a redirect fetch refuses to follow (redirect: 'error') closes its connection too", async () => {
  const { url, bigSockets } = await redirectingServer()
  const fetch = createFetch()
  closers.push(fetch)
  const error = await rejection(fetch(`${url}/big`, { redirect: 'error' }))
  expect(error).toMatchObject({ code: 'UNEXPECTED_REDIRECT' })
  await closed(bigSockets[0])
  await fetch.close()
}, 5000)
