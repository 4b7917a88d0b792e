import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { closedPort } from '@hourglass/testkit'
import { fetch as undiciFetch } from 'undici'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createFetch, type HourglassFetch, isConnectError } from '../src/index.js'
import { rejection } from './helpers.js'

// A stream body the call ends without reading. A call whose signal is
// already aborted sends nothing: undici's fetch then cancels its stream
// body with the signal's reason (the fetch spec's "abort the fetch() call":
// cancel the request's body), and the README says a stream `init.body` is
// cancelled once the call fails on `init.signal`. createFetch refused the
// call and left the stream as given: its source's cancel never ran (a file
// behind a web stream held open). And a Node stream undici never began to
// read — that call, or one whose connect was refused — was not destroyed,
// though the README says it is: its iterator's return(), which destroys it,
// does nothing before the iterator's first read. A file read stream kept
// its descriptor open for as long as the caller held the stream.

let server: Server
let url: string
let fetch: HourglassFetch
let requests = 0
beforeAll(async () => {
  server = createServer((req, res) => {
    requests += 1
    req.resume()
    req.on('end', () => res.end('read'))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  fetch = createFetch()
})
afterAll(async () => {
  await fetch.close()
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

/** A web stream that records its source's cancel. */
function recordedStream(): { body: ReadableStream<Uint8Array>; cancelled: Promise<unknown> } {
  let onCancel: (reason: unknown) => void = () => {}
  const cancelled = new Promise<unknown>((resolve) => {
    onCancel = resolve
  })
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(new Uint8Array(8))
    },
    cancel: onCancel,
  })
  return { body, cancelled }
}

it("a web stream body under a signal already aborted is cancelled with the signal's reason, as undici's fetch cancels it", async () => {
  const reason = new Error('the caller left')
  for (const send of [undiciFetch, fetch]) {
    const { body, cancelled } = recordedStream()
    const init = { method: 'POST', body, duplex: 'half', signal: AbortSignal.abort(reason) }
    expect(await rejection(send(url, init as never))).toBe(reason)
    expect(await cancelled).toBe(reason)
  }
  expect(requests).toBe(0)
})

it('a Node stream body under a signal already aborted is destroyed, not left open', async () => {
  const body = Readable.from(
    (function* () {
      for (;;) yield Buffer.alloc(8)
    })(),
  )
  const reason = new Error('the caller left')
  const init = { method: 'POST', body, duplex: 'half', signal: AbortSignal.abort(reason) }
  expect(await rejection(fetch(url, init as never))).toBe(reason)
  if (!body.destroyed) await new Promise((resolve) => body.once('close', resolve))
  expect(body.destroyed).toBe(true)
  expect(requests).toBe(0)
})

it('a Node stream body of a call whose connect is refused is destroyed, as the README says', async () => {
  // A port nothing listens on (not one a server just released: another
  // file's listen(0) may take it).
  const port = await closedPort()
  const body = Readable.from(
    (function* () {
      for (;;) yield Buffer.alloc(8)
    })(),
  )
  const init = { method: 'POST', body, duplex: 'half', retry: false }
  const error = await rejection(fetch(`http://127.0.0.1:${port}/`, init as never))
  expect(isConnectError(error)).toBe(true)
  if (!body.destroyed) await new Promise((resolve) => body.once('close', resolve))
  expect(body.destroyed).toBe(true)
  expect(body.readableDidRead).toBe(false)
})

it("a proxy's upload (body: req) to an upstream that is down: the request is read out and dropped, its socket kept for the handler's answer", async () => {
  // A port nothing listens on.
  const upstream = `http://127.0.0.1:${await closedPort()}/`
  let uploadCut: boolean | undefined
  const proxy = createServer(async (req, res) => {
    try {
      await fetch(upstream, { method: 'POST', body: req, duplex: 'half', retry: false } as never)
      res.end('sent')
    } catch (error) {
      // Read out, not cut: destroyed before its end, it read as a request
      // whose client left ('aborted'), with the client still there.
      uploadCut = req.readableAborted
      res.statusCode = 502
      res.end(`bad gateway: ${(error as Error).name}`)
    }
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  try {
    const port = (proxy.address() as AddressInfo).port
    // Before: the client's socket was reset with the upload (`other side closed`).
    const answer = await undiciFetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: 'hello' })
    expect(answer.status).toBe(502)
    expect(await answer.text()).toBe('bad gateway: ConnectError')
    expect(uploadCut).toBe(false)
  } finally {
    proxy.closeAllConnections()
    await new Promise<void>((resolve) => proxy.close(() => resolve()))
  }
})
