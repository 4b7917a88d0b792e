import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { ClientClosedError, Deadline } from '@hourglass/core'
import { closedPort } from '@hourglass/testkit'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createFetch, type HourglassFetch } from '../src/index.js'
import { rejection } from './helpers.js'

// undici's fetch reads a stream upload in a loop that, once the fetch is
// aborted or has failed, goes on reading the body to its end and drops each
// chunk: the caller's stream was still pulled after the call had ended (a
// file read to its end for nobody, an endless stream forever). createFetch
// now stops reading it and cancels it with the call's reason. Each test
// races the cancel against the source being pulled many more times after
// the call ended, or against a thousand turns of the event loop for a
// source left suspended: events, no clock.

const MORE_PULLS = 200

let server: Server
let base: string
let fetch: HourglassFetch
/** By path: resolves once the server has received this much of that upload. */
const onBytes = new Map<string, { at: number; resolve: () => void }>()

beforeAll(async () => {
  // Reads the upload and never answers; /reset destroys the socket once it has some bytes.
  server = createServer((req) => {
    let received = 0
    req.on('data', (chunk: Buffer) => {
      received += chunk.length
      const waiter = onBytes.get(req.url ?? '')
      if (waiter && received >= waiter.at) {
        onBytes.delete(req.url ?? '')
        waiter.resolve()
        if (req.url === '/reset') req.socket.destroy()
      }
    })
    req.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  fetch = createFetch()
})
afterAll(async () => {
  await fetch.close()
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

function serverReceived(path: string, bytes: number): Promise<void> {
  return new Promise((resolve) => {
    onBytes.set(path, { at: bytes, resolve })
  })
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await turn()
}

/** An endless source: its pulls, a promise of N more of them, and of its cancel. */
function endless() {
  let pulls = 0
  let waiter: { at: number; resolve: () => void } | undefined
  let cancelled!: (reason: unknown) => void
  const cancel = new Promise<unknown>((resolve) => {
    cancelled = resolve
  })
  const pulled = () => {
    pulls += 1
    if (waiter && pulls >= waiter.at) waiter.resolve()
  }
  return {
    pulled,
    cancelled,
    /** 'cancelled' (with its reason) when the source is cancelled first, else 'pulled on'. */
    afterCall(): Promise<{ outcome: string; reason?: unknown }> {
      const more = new Promise<void>((resolve) => {
        waiter = { at: pulls + MORE_PULLS, resolve }
      })
      return Promise.race([
        cancel.then((reason) => ({ outcome: 'cancelled', reason })),
        more.then(() => ({
          outcome: `pulled on: ${MORE_PULLS} more chunks read after the call ended`,
        })),
        // Neither pulled nor ended (undici's loop left it suspended): a cancel comes within a few turns.
        turns(1000).then(() => ({ outcome: 'left open: neither read nor cancelled' })),
      ])
    },
  }
}

it('a stream upload is cancelled with the caller’s reason when its signal aborts: no chunk is read for nobody', async () => {
  const source = endless()
  const body = new ReadableStream<Uint8Array>({
    // One chunk per turn of the event loop: a producer that never starves it.
    async pull(controller) {
      await turn()
      source.pulled()
      controller.enqueue(new Uint8Array(1024))
    },
    cancel: source.cancelled,
  })
  const controller = new AbortController()
  const reason = new ClientClosedError()
  void serverReceived('/signal', 4096).then(() => controller.abort(reason))
  const error = await rejection(
    fetch(`${base}/signal`, { method: 'POST', body, duplex: 'half', signal: controller.signal }),
  )
  expect(error).toBe(reason)
  const after = await source.afterCall()
  expect(after.outcome).toBe('cancelled')
  expect(after.reason).toBe(reason)
})

it('a Node stream upload is destroyed when the deadline is cancelled mid-upload', async () => {
  const source = endless()
  const body = new Readable({
    read() {
      void turn().then(() => {
        source.pulled()
        this.push(Buffer.alloc(1024))
      })
    },
    destroy(error, callback) {
      source.cancelled('destroyed')
      callback(error)
    },
  })
  const deadline = Deadline.after(60_000)
  const reason = new ClientClosedError()
  void serverReceived('/deadline', 4096).then(() => deadline.cancel(reason))
  const error = await rejection(
    fetch(`${base}/deadline`, { method: 'POST', body: body as never, duplex: 'half', deadline }),
  )
  expect(error).toBe(reason)
  expect((await source.afterCall()).outcome).toBe('cancelled')
  expect(body.destroyed).toBe(true)
})

it('an async generator upload is ended when the connection is reset mid-upload', async () => {
  const source = endless()
  async function* chunks() {
    try {
      for (;;) {
        await turn()
        source.pulled()
        yield new Uint8Array(1024)
      }
    } finally {
      source.cancelled('returned')
    }
  }
  void serverReceived('/reset', 4096)
  const error = await rejection(
    fetch(`${base}/reset`, { method: 'POST', body: chunks() as never, duplex: 'half' }),
  )
  expect(error).toBeInstanceOf(Error)
  expect((await source.afterCall()).outcome).toBe('cancelled')
})

it('so is the stream body of Node’s global Request (rebuilt as undici’s), when the deadline runs out', async () => {
  const source = endless()
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      await turn()
      source.pulled()
      controller.enqueue(new Uint8Array(1024))
    },
    cancel: source.cancelled,
  })
  const input = new globalThis.Request(`${base}/global-request`, {
    method: 'POST',
    body,
    duplex: 'half',
  } as RequestInit)
  const deadline = Deadline.after(60_000)
  const reason = new ClientClosedError()
  void serverReceived('/global-request', 4096).then(() => deadline.cancel(reason))
  expect(await rejection(fetch(input, { deadline }))).toBe(reason)
  const after = await source.afterCall()
  expect(after.outcome).toBe('cancelled')
  expect(after.reason).toBe(reason)
  expect(input.bodyUsed).toBe(true)
})

it('a stream upload that completes is read to its end and answered as before', async () => {
  const echo = createServer((req, res) => {
    let received = 0
    req.on('data', (chunk: Buffer) => {
      received += chunk.length
    })
    req.on('end', () => res.end(String(received)))
  })
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
  try {
    const url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 8) {
          controller.close()
          return
        }
        sent += 1
        controller.enqueue(new Uint8Array(1000))
      },
    })
    const res = await fetch(url, { method: 'POST', body, duplex: 'half' })
    expect(await res.text()).toBe('8000')
    const gen = async function* () {
      yield 'ab'
      yield Buffer.from('cd')
    }
    const res2 = await fetch(url, { method: 'POST', body: gen() as never, duplex: 'half' })
    expect(await res2.text()).toBe('4')
  } finally {
    await new Promise<void>((resolve) => echo.close(() => resolve()))
  }
})

it('a stream not read yet is cancelled when the connect is refused: undici’s fetch left it locked for good, its source open', async () => {
  const port = await closedPort()
  let cancelled: unknown
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new Uint8Array(8))
    },
    cancel(reason) {
      cancelled = reason
    },
  })
  const error = await rejection(
    fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body, duplex: 'half' }),
  )
  expect(error).toMatchObject({ code: 'CONNECT_FAILED' })
  expect(cancelled).toBe(error)
})

it('a locked stream is refused by fetch as before (not read by us)', async () => {
  const body = new ReadableStream<Uint8Array>()
  body.getReader()
  const error = await rejection(fetch(base, { method: 'POST', body, duplex: 'half' }))
  expect(String((error as Error).message)).toMatch(/locked|disturbed/)
})
