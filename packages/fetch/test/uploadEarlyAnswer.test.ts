import { createReadStream } from 'node:fs'
import {
  Agent,
  type ClientRequest,
  createServer,
  type IncomingMessage,
  type RequestOptions,
  request,
  type Server,
} from 'node:http'
import type { AddressInfo } from 'node:net'
import { finished } from 'node:stream/promises'
import { setImmediate as tick } from 'node:timers/promises'
import { Deadline } from '@hourglass/core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createFetch, type HourglassFetch } from '../src/index.js'

// A server that answers before it has read the upload (an early 413) ends
// the exchange with the upload unfinished. undici's fetch went on reading
// the caller's stream for nobody — /dev/zero for ever, a generator never
// returned — after the answer was read, and fetch.close() waited on it.
// The attempt's end now stops the upload it carried; a body sent whole is
// answered as before.

let server: Server
let base: string
let fetch: HourglassFetch
// /unread reads nothing and answers when the test says: its request, to wait on.
let unread: (req: IncomingMessage, answer: () => void) => void = () => {}

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/early') {
      res.writeHead(413, { connection: 'close' })
      res.end('too big')
      return
    }
    if (req.url === '/unread') {
      unread(req, () => {
        res.writeHead(413, { connection: 'close' })
        res.end('too big')
      })
      return
    }
    let received = 0
    req.on('data', (chunk: Buffer) => {
      received += chunk.length
    })
    req.on('end', () => res.end(String(received)))
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

const upload = { method: 'POST', duplex: 'half' } as const

/**
 * What a proxied request went through: its `aborted`, `end` and `close`
 * events in order, and how `finished(req)` settled (`'finished'`, or the
 * error's code).
 */
function watchEnd(req: IncomingMessage): { seen: string[]; ended: Promise<string> } {
  const seen: string[] = []
  req.on('aborted', () => seen.push('aborted'))
  req.on('end', () => seen.push('end'))
  req.on('close', () => seen.push('close'))
  const ended = finished(req).then(
    () => 'finished',
    (error: Error & { code?: string }) => error.code ?? error.message,
  )
  return { seen, ended }
}

/** `"<status> <body>"` of a response, once it has ended. */
function statusAndText(res: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = `${res.statusCode} `
    res.on('data', (chunk: Buffer) => {
      text += chunk
    })
    res.on('end', () => resolve(text))
  })
}

/** The body of a GET of `path` on `target` (a keep-alive agent's connection). */
function getText(target: RequestOptions, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ ...target, path }, (res) => {
      void statusAndText(res).then((text) => resolve(text.slice(text.indexOf(' ') + 1)))
    })
      .on('error', reject)
      .end()
  })
}

it('an endless generator is returned once the early 413 is read', async () => {
  let returned!: () => void
  const finallyRan = new Promise<void>((resolve) => {
    returned = resolve
  })
  async function* endless() {
    try {
      for (;;) yield new Uint8Array(16_384)
    } finally {
      returned()
    }
  }
  const response = await fetch(`${base}/early`, {
    ...upload,
    body: endless(),
    deadline: Deadline.after(10_000),
  })
  expect(response.status).toBe(413)
  expect(await response.text()).toBe('too big')
  // Before, never: the test's own timeout failed it.
  await finallyRan
})

it('a ReadStream of /dev/zero is closed once the early 413 is read', async () => {
  const stream = createReadStream('/dev/zero', { highWaterMark: 16_384 })
  const closed = new Promise<void>((resolve) => stream.once('close', resolve))
  const response = await fetch(`${base}/early`, {
    ...upload,
    body: stream,
    deadline: Deadline.after(10_000),
  })
  expect(response.status).toBe(413)
  expect(await response.text()).toBe('too big')
  await closed
  expect(stream.destroyed).toBe(true)
})

it('an upload sent whole is answered as before', async () => {
  let finished = false
  async function* chunks() {
    for (let i = 0; i < 8; i++) yield new Uint8Array(16_384)
    finished = true
  }
  const response = await fetch(`${base}/read`, { ...upload, body: chunks() })
  expect(await response.text()).toBe(String(8 * 16_384))
  expect(finished).toBe(true)
})

it("a proxy's upload (body: req) answered early: the rest of the client's upload is dropped, its keep-alive connection carries the next request", async () => {
  let connections = 0
  let proxied: IncomingMessage | undefined
  const proxy = createServer(async (req, res) => {
    if (req.method === 'GET') {
      res.end('next')
      return
    }
    proxied = req
    const upstream = await fetch(`${base}/early`, { ...upload, body: req, retry: false } as never)
    res.statusCode = upstream.status
    res.end(await upstream.text())
  })
  proxy.on('connection', () => {
    connections += 1
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const target = { host: '127.0.0.1', port: (proxy.address() as AddressInfo).port, agent }
  try {
    // Node's client uploads to its end whatever the answer: the rest of the
    // body goes out as the 413 comes in, on the connection the next request takes.
    const first = await new Promise<string>((resolve, reject) => {
      const sending = request({ ...target, method: 'POST', path: '/upload' }, (res) => {
        sending.write(Buffer.alloc(1024))
        sending.end(Buffer.alloc(64 * 1024))
        statusAndText(res).then(resolve)
      })
      sending.on('error', reject)
      sending.flushHeaders()
      sending.write(Buffer.alloc(1024))
    })
    expect(first).toBe('413 too big')
    // Before, the proxied request was destroyed: Node stopped reading its
    // socket for good, and this request was never answered.
    const next = await getText(target, '/next')
    expect(next).toBe('next')
    expect(connections).toBe(1)
    // Read to its end and dropped, as Node drops a body nobody reads.
    expect(proxied?.complete).toBe(true)
  } finally {
    agent.destroy()
    proxy.closeAllConnections()
    await new Promise<void>((resolve) => proxy.close(() => resolve()))
  }
})

it("a proxy's upload (body: req) answered early while undici was not reading it: the request still ends and closes", async () => {
  let proxied: IncomingMessage | undefined
  let watched: ReturnType<typeof watchEnd> | undefined
  const unreadAnswered = new Promise<{ upstream: IncomingMessage; answer: () => void }>(
    (resolve) => {
      unread = (upstream, answer) => resolve({ upstream, answer })
    },
  )
  const proxy = createServer(async (req, res) => {
    if (req.method === 'GET') {
      res.end('next')
      return
    }
    proxied = req
    watched = watchEnd(req)
    const upstream = await fetch(`${base}/unread`, { ...upload, body: req, retry: false } as never)
    res.statusCode = upstream.status
    res.end(await upstream.text())
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const target = { host: '127.0.0.1', port: (proxy.address() as AddressInfo).port, agent }
  try {
    const first = new Promise<string>((resolve, reject) => {
      const sending = request({ ...target, method: 'POST', path: '/upload' }, (res) => {
        statusAndText(res).then(resolve)
      })
      sending.on('error', reject)
      // More than the sockets between the three hold: undici's writes to
      // the upstream that reads nothing back up, and it stops pulling req.
      sending.end(Buffer.alloc(16 * 1024 * 1024))
    })
    const { upstream, answer } = await unreadAnswered
    // Both requests' buffers full: the upstream reads nothing, nor does
    // undici, which waits for its socket to drain, not inside req's iterator.
    const full = (req: IncomingMessage | undefined) =>
      req !== undefined && req.readableLength >= req.readableHighWaterMark
    while (!full(upstream) || !full(proxied)) await tick()
    expect(proxied?.complete).toBe(false)
    answer()
    expect(await first).toBe('413 too big')
    const next = await getText(target, '/next')
    expect(next).toBe('next')
    // Before, the rest was read out but its end never reached whoever
    // waits on it (end, close, finished(req) for ever pending): the
    // iterator's 'readable' listener held the stream out of flowing.
    expect(await watched?.ended).toBe('finished')
    expect(watched?.seen).toEqual(['end', 'close'])
  } finally {
    agent.destroy()
    proxy.closeAllConnections()
    await new Promise<void>((resolve) => proxy.close(() => resolve()))
  }
})

/**
 * A client of `proxy` that starts a 1 MiB upload on `agent` (4 KiB of it
 * sent), reads its answer, then `leave`s: the answer's status once it has.
 */
function uploadThenLeave(
  proxy: Server,
  agent: Agent,
  leave: (sending: ClientRequest) => Promise<void> | void,
): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const port = (proxy.address() as AddressInfo).port
    const headers = { 'content-length': 1024 * 1024 }
    const sending = request({ host: '127.0.0.1', port, agent, method: 'POST', headers }, (res) => {
      res.resume()
      res.on('end', () => {
        Promise.resolve(leave(sending)).then(() => resolve(res.statusCode), reject)
      })
    })
    sending.on('error', reject)
    sending.write(Buffer.alloc(4 * 1024))
  })
}

it("a proxy's upload (body: req) answered early, then its client leaves mid-upload: the request is aborted and closes", async () => {
  let watched: ReturnType<typeof watchEnd> | undefined
  const proxy = createServer(async (req, res) => {
    watched = watchEnd(req)
    const upstream = await fetch(`${base}/early`, { ...upload, body: req, retry: false } as never)
    res.statusCode = upstream.status
    res.end(await upstream.text())
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  try {
    // Answered, the client sends a little more of its 1 MiB and leaves.
    const status = await uploadThenLeave(
      proxy,
      agent,
      (sending) =>
        new Promise((left) => {
          sending.write(Buffer.alloc(8 * 1024), () => {
            sending.destroy()
            left()
          })
        }),
    )
    expect(status).toBe(413)
    // Before, never: the dropped request, no longer Node's to abort once
    // answered, waited for the rest of a body whose connection was gone.
    expect(await watched?.ended).toBe('ERR_STREAM_PREMATURE_CLOSE')
    expect(watched?.seen).toEqual(['aborted', 'close'])
  } finally {
    agent.destroy()
    proxy.closeAllConnections()
    await new Promise<void>((resolve) => proxy.close(() => resolve()))
  }
})

it("a proxy's upload (body: req) whose client left mid-upload before the call ended: the request is aborted and closes", async () => {
  let watched: ReturnType<typeof watchEnd> | undefined
  let socketClosed: Promise<void> | undefined
  const unreadAnswered = new Promise<() => void>((resolve) => {
    unread = (_upstream, answer) => resolve(answer)
  })
  let relay!: (text: Promise<string>) => void
  const relayed = new Promise<string>((resolve) => {
    relay = resolve
  })
  const proxy = createServer(async (req, res) => {
    watched = watchEnd(req)
    socketClosed = new Promise((resolve) => req.socket.once('close', () => resolve()))
    relay(
      fetch(`${base}/unread`, { ...upload, body: req, retry: false } as never)
        .then((answer) => answer.text())
        .catch((error: Error) => error.message),
    )
    // The upload under way upstream, the client is answered (a 202) while the call goes on.
    await unreadAnswered
    res.statusCode = 202
    res.end()
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  try {
    const status = await uploadThenLeave(proxy, agent, (sending) => {
      sending.destroy()
    })
    expect(status).toBe(202)
    const answer = await unreadAnswered
    // The client's connection is gone before the call ends: its request
    // is dropped with no socket left to bring the rest.
    await socketClosed
    answer()
    expect(await watched?.ended).toBe('ERR_STREAM_PREMATURE_CLOSE')
    expect(watched?.seen).toEqual(['aborted', 'close'])
    // The upload's end is no failure of the call: its answer is read whole.
    expect(await relayed).toBe('too big')
  } finally {
    agent.destroy()
    proxy.closeAllConnections()
    await new Promise<void>((resolve) => proxy.close(() => resolve()))
  }
})

it('an async iterable whose next() returns a thenable, not a Promise, is sent whole, as undici sends it', async () => {
  // A read is wrapped to end as done once the call has ended; wrapped with
  // `.catch` on what next() returned, a thenable without it threw a
  // TypeError ("next(...).catch is not a function") and nothing was sent.
  let i = 0
  const thenables = {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        const result =
          i < 3
            ? { done: false, value: new Uint8Array(5).fill(i++) }
            : { done: true, value: undefined }
        // biome-ignore lint/suspicious/noThenProperty: a thenable is what this test sends
        return { then: (resolve: (value: unknown) => void) => resolve(result) }
      },
    }),
  }
  const response = await fetch(`${base}/count`, { ...upload, body: thenables } as never)
  expect(await response.text()).toBe('15')
})
