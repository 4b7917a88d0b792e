import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  ClientClosedError,
  Deadline,
  isDeadlineExceeded,
  ManualClock,
  systemClock,
} from '@hourglass/core'
import {
  closedPort,
  type FaultServer,
  faultServer,
  type TcpFaultServer,
  tcpFaultServer,
} from '@hourglass/testkit'
import { Request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type AttemptTimings,
  BodyTimeoutError,
  ConnectError,
  ConnectTimeoutError,
  createFetch,
  DnsTimeoutError,
  HeadersTimeoutError,
  type HourglassFetch,
  isBodyTimeout,
  isConnectError,
  isConnectTimeout,
  isDnsError,
  isDnsTimeout,
  isHeadersTimeout,
  type LookupFunction,
} from '../src/index.js'
import { CountingClock, type EgressEvents, recordEgress, rejection } from './helpers.js'

let servers: { close(): Promise<void> }[] = []
let fetches: HourglassFetch[] = []
let events: EgressEvents | undefined

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  servers.push(server)
  return server
}
async function tcp(options: Parameters<typeof tcpFaultServer>[0]): Promise<TcpFaultServer> {
  const server = await tcpFaultServer(options)
  servers.push(server)
  return server
}
function client(options: Parameters<typeof createFetch>[0] = {}, hooks = {}): HourglassFetch {
  const fetch = createFetch(options, hooks)
  fetches.push(fetch)
  return fetch
}

afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(fetches.map((f) => f.close()))
  await Promise.all(servers.map((s) => s.close()))
  fetches = []
  servers = []
})

describe('propagation', () => {
  it('sends what is left of the deadline in x-deadline-remaining-ms, computed at dispatch', async () => {
    const server = await serve({ type: 'respond' })
    const fetch = client()
    const deadline = Deadline.after(2000)
    const res = await fetch(server.url, { deadline })
    await res.text()
    const sent = Number(server.records[0]?.headers['x-deadline-remaining-ms'])
    expect(sent).toBeLessThanOrEqual(2000)
    expect(sent).toBeGreaterThan(1500)
  })

  it('replaces an inbound x-deadline-remaining-ms header the caller copied along', async () => {
    const server = await serve({ type: 'respond' })
    const res = await client()(server.url, {
      deadline: Deadline.after(500),
      headers: { 'x-deadline-remaining-ms': '99999' },
    })
    await res.text()
    expect(Number(server.records[0]?.headers['x-deadline-remaining-ms'])).toBeLessThanOrEqual(500)
  })

  it('with under minBudgetMs left, fails at once without touching the network', async () => {
    const server = await serve({ type: 'respond' })
    const error = await rejection(
      client({ minBudgetMs: 50 })(server.url, { deadline: Deadline.after(20) }),
    )
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(server.totalConnections).toBe(0)
    expect(server.records).toHaveLength(0)
  })

  it('keep-alive connections skip DNS and connect', async () => {
    const server = await serve({ type: 'respond' })
    const timings: AttemptTimings[] = []
    const lookup: LookupFunction = (_host, _options, callback) => callback(null, '127.0.0.1', 4)
    const fetch = client(
      { lookup },
      {
        onAttempt: (a: { timings: AttemptTimings; onFinish(f: () => void): void }) =>
          a.onFinish(() => timings.push({ ...a.timings })),
      },
    )
    for (let i = 0; i < 5; i++) await (await fetch(`http://svc.test:${server.port}/`)).text()
    const fresh = timings.filter((t) => t.connectMs !== undefined)
    const reused = timings.filter((t) => t.connectMs === undefined)
    // undici may open a second socket while the first is being released; every other call reuses one.
    expect(server.totalConnections).toBeLessThan(5)
    expect(fresh).toHaveLength(server.totalConnections)
    for (const t of fresh) expect(t.dnsMs).toBeTypeOf('number')
    expect(reused.length).toBeGreaterThan(0)
    for (const t of reused) {
      expect(t.dnsMs).toBeUndefined()
      expect(t.headersMs).toBeTypeOf('number')
    }
  })
})

describe('DNS phase', () => {
  it('a lookup that never answers fails with DNS_TIMEOUT at dnsTimeoutMs, and leaves no timer or socket behind', async () => {
    const clock = new CountingClock()
    let asked = 0
    const lookup: LookupFunction = () => {
      asked++ // never calls back
    }
    events = recordEgress()
    const fetch = client({ lookup, dnsTimeoutMs: 150, clock })
    const started = performance.now()
    const error = await rejection(fetch('http://never.test/', { deadline: Deadline.after(5000) }))
    const took = performance.now() - started
    expect(isDnsTimeout(error)).toBe(true)
    expect(error).toBeInstanceOf(DnsTimeoutError)
    expect(error).toMatchObject({
      code: 'DNS_TIMEOUT',
      phase: 'dns',
      bytesReceived: 0,
      limitMs: 150,
    })
    expect(took).toBeGreaterThanOrEqual(140)
    expect(took).toBeLessThan(2000)
    expect(asked).toBe(1) // a DNS timeout is not retried
    expect(events.skipped).toMatchObject([{ reason: 'DNS_TIMEOUT', why: 'not-retryable' }])
    expect(clock.pending).toBe(0)
  })

  it('when the DNS limit and the deadline fall together, the deadline is the reason', async () => {
    const lookup: LookupFunction = () => {}
    const error = await rejection(
      client({ lookup, dnsTimeoutMs: 1000 })('http://never.test/', {
        deadline: Deadline.after(120),
      }),
    )
    expect(isDeadlineExceeded(error)).toBe(true)
  })

  it('a name that does not resolve is a DNS_FAILED in the dns phase, named as such', async () => {
    const lookup: LookupFunction = (host, _o, callback) =>
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }), '')
    const error = await rejection(client({ lookup, retry: false })('http://nowhere.test/'))
    expect(isDnsError(error)).toBe(true)
    expect(isConnectError(error)).toBe(false)
    expect(error).toMatchObject({
      code: 'DNS_FAILED',
      phase: 'dns',
      osCode: 'ENOTFOUND',
      hostname: 'nowhere.test',
    })
    expect((error as Error).message).toMatch(/^name lookup failed for nowhere\.test: ENOTFOUND/)
  })

  it('a DNS failure, however fast, is never retried as a fast connect failure', async () => {
    const recorded = recordEgress()
    events = recorded
    let lookups = 0
    const lookup: LookupFunction = (host, _o, callback) => {
      lookups++
      callback(Object.assign(new Error(`getaddrinfo EAI_AGAIN ${host}`), { code: 'EAI_AGAIN' }), '')
    }
    // Retries on (the default rules), a frozen clock: the failure measures 0 ms.
    const error = await rejection(
      client({ lookup, clock: { ...systemClock, now: () => 0 } })('http://flaky.test/'),
    )
    expect(isDnsError(error)).toBe(true)
    expect(lookups).toBe(1)
    expect(recorded.retries).toHaveLength(0)
    expect(recorded.skipped).toMatchObject([{ reason: 'DNS_FAILED', why: 'dns-failure' }])
  })
})

describe('connect phase', () => {
  it('a refused connection fails fast with CONNECT_FAILED (fast: true), the OS error as cause', async () => {
    const port = await closedPort()
    const error = await rejection(client({ retry: false })(`http://127.0.0.1:${port}/`))
    expect(error).toBeInstanceOf(ConnectError)
    expect(error).toMatchObject({
      code: 'CONNECT_FAILED',
      phase: 'connect',
      fast: true,
      osCode: 'ECONNREFUSED',
    })
    expect((error as Error).cause).toMatchObject({ code: 'ECONNREFUSED' })
  })

  it('a name with several addresses connects to one that answers when the first refuses (::1 before 127.0.0.1)', async () => {
    const server = await serve({ type: 'respond', body: 'up' })
    let asked: { all?: boolean } | undefined
    const lookup: LookupFunction = (_name, options, callback) => {
      asked = options
      callback(null, [
        { address: '::1', family: 6 },
        { address: '127.0.0.1', family: 4 },
      ])
    }
    const res = await client({ lookup, retry: false })(`http://svc.test:${server.port}/`)
    expect(await res.text()).toBe('up')
    expect(asked).toMatchObject({ all: true })
  })

  it('a name whose every address refuses fails fast with CONNECT_FAILED', async () => {
    const port = await closedPort()
    const lookup: LookupFunction = (_name, _options, callback) =>
      callback(null, [
        { address: '127.0.0.2', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ])
    const error = await rejection(client({ lookup, retry: false })(`http://svc.test:${port}/`))
    expect(error).toBeInstanceOf(ConnectError)
    expect(error).toMatchObject({ code: 'CONNECT_FAILED', phase: 'connect', fast: true })
    expect((error as ConnectError).osCode).toBe('ECONNREFUSED')
  })

  it('a TLS handshake that never completes fails with CONNECT_TIMEOUT and the socket is closed', async () => {
    const silent = await tcp({ mode: 'silent' })
    const started = performance.now()
    const error = await rejection(
      client({ connectTimeoutMs: 150 })(silent.httpsUrl, { deadline: Deadline.after(5000) }),
    )
    expect(isConnectTimeout(error)).toBe(true)
    expect(error).toBeInstanceOf(ConnectTimeoutError)
    expect(error).toMatchObject({ phase: 'connect', limitMs: 150, bytesReceived: 0 })
    expect(performance.now() - started).toBeLessThan(2000)
    await silent.idle() // the abandoned socket really went away
    expect(silent.openConnections).toBe(0)
  })

  it('when the connect limit and the deadline fall together, the deadline is the reason', async () => {
    const silent = await tcp({ mode: 'silent' })
    const error = await rejection(
      client({ connectTimeoutMs: 2000 })(silent.httpsUrl, { deadline: Deadline.after(150) }),
    )
    expect(isDeadlineExceeded(error)).toBe(true)
  })

  it('a connection reset after 100 ms of handshake is a slow CONNECT_FAILED (fast: false)', async () => {
    const resetting = await tcp({ mode: 'reset', afterMs: 100 })
    const error = await rejection(client({ retry: false })(resetting.httpsUrl))
    expect(error).toMatchObject({ code: 'CONNECT_FAILED', fast: false })
  })
})

describe('headers phase', () => {
  it('no first byte within headersTimeoutMs fails with HEADERS_TIMEOUT and 0 bytes', async () => {
    const server = await serve({ type: 'hang' })
    const error = await rejection(
      client({ headersTimeoutMs: 150 })(server.url, {
        method: 'POST',
        body: 'x',
        deadline: Deadline.after(5000),
      }),
    )
    expect(error).toBeInstanceOf(HeadersTimeoutError)
    expect(isHeadersTimeout(error)).toBe(true)
    expect(error).toMatchObject({
      code: 'HEADERS_TIMEOUT',
      phase: 'headers',
      bytesReceived: 0,
      limitMs: 150,
    })
    const gone = await server.clientGone(0)
    expect(gone.workingWhenClientLeft).toBe(true)
  })

  it('when the headers limit and the deadline fall together, the deadline is the reason', async () => {
    const server = await serve({ type: 'hang' })
    const error = await rejection(
      client({ headersTimeoutMs: 120, retry: false })(server.url, {
        deadline: Deadline.after(120),
      }),
    )
    expect(isDeadlineExceeded(error)).toBe(true)
  })

  // A server that reads an upload and answers at its end; `received(n)`
  // resolves once it holds n bytes, so the test moves its clock only after
  // the client has written them.
  async function uploadSink() {
    let bytes = 0
    const waiters: { at: number; resolve: () => void }[] = []
    const server = createServer((req, res) => {
      req.on('data', (chunk: Buffer) => {
        bytes += chunk.length
        for (const w of waiters.filter((w) => bytes >= w.at)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve()
        }
      })
      req.on('end', () => res.end(`got ${bytes}`))
      req.on('error', () => {})
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    servers.push({
      close: () => {
        server.closeAllConnections()
        return new Promise<void>((resolve) => server.close(() => resolve()))
      },
    })
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/upload`,
      received: (at: number) => new Promise<void>((resolve) => waiters.push({ at, resolve })),
    }
  }
  /** An upload of 16 KiB chunks, each sent when `next()` is called; `finish()` ends it. */
  function pacedUpload() {
    // Decisions queue up until the body is pulled: undici starts reading it
    // when it writes the request, which may be after the first `next()`.
    const decisions: boolean[] = []
    let waiting: ((more: boolean) => void) | undefined
    const decide = (more: boolean) => {
      if (waiting) {
        const resolve = waiting
        waiting = undefined
        resolve(more)
      } else decisions.push(more)
    }
    async function* body() {
      for (;;) {
        const more =
          decisions.length > 0
            ? decisions.shift()
            : await new Promise<boolean>((resolve) => {
                waiting = resolve
              })
        if (!more) return
        yield new Uint8Array(16384)
      }
    }
    return { body: body(), next: () => decide(true), finish: () => decide(false) }
  }

  it('with the defaults, an upload longer than headersTimeoutMs is answered: the limit counts from the last piece sent', async () => {
    // Before, the limit counted from the request's first byte: a 12 s upload
    // under a 30 s deadline failed as HEADERS_TIMEOUT at 10 s, the server
    // still reading it.
    const sink = await uploadSink()
    const clock = new ManualClock()
    const upload = pacedUpload()
    const call = client()(sink.url, {
      method: 'PUT',
      body: upload.body as never,
      duplex: 'half',
      deadline: Deadline.after(30_000, { clock }),
    } as never)
    const outcome = call.then(
      async (res) => `${res.status} ${await res.text()}`,
      (error: { code?: string }) => `failed ${error.code}`,
    )
    for (let i = 1; i <= 3; i++) {
      const got = sink.received(i * 16384).then(() => 'sent')
      upload.next()
      // A call that has already failed sends no more: stop and report how.
      if ((await Promise.race([got, outcome])) !== 'sent') break
      clock.advance(6000) // 18 s of upload in all: each piece within 10 s of the last
    }
    upload.finish()
    expect(await outcome).toBe('200 got 49152')
  })

  it('an upload that stalls for headersTimeoutMs still fails with HEADERS_TIMEOUT', async () => {
    const sink = await uploadSink()
    const clock = new ManualClock()
    const upload = pacedUpload()
    const call = client()(sink.url, {
      method: 'PUT',
      body: upload.body as never,
      duplex: 'half',
      deadline: Deadline.after(30_000, { clock }),
    } as never)
    const got = sink.received(16384)
    upload.next()
    await got
    clock.advance(10_000)
    expect(await rejection(call)).toMatchObject({ code: 'HEADERS_TIMEOUT', limitMs: 10_000 })
    upload.finish()
  })

  it('headersTimeoutMs: 0 leaves only the deadline to bound the wait', async () => {
    // Read as a limit of 0 ms (or a timer of 1), 0 fails long before 50 ms.
    const server = await serve({ type: 'respond', delayMs: 50, body: 'late' })
    const res = await client({ headersTimeoutMs: 0 })(server.url, {
      deadline: Deadline.after(3000),
    })
    expect(await res.text()).toBe('late')
  })
})

describe('body phase', () => {
  it('a body that goes quiet for bodyTimeoutMs fails with BODY_TIMEOUT carrying the bytes received', async () => {
    const server = await serve({ type: 'bytes-then-stall', bytes: 100 })
    const res = await client({ bodyTimeoutMs: 150 })(server.url, { deadline: Deadline.after(5000) })
    expect(res.status).toBe(200)
    const error = await rejection(res.arrayBuffer())
    expect(error).toBeInstanceOf(BodyTimeoutError)
    expect(isBodyTimeout(error)).toBe(true)
    expect(error).toMatchObject({ code: 'BODY_TIMEOUT', phase: 'body', bytesReceived: 100 })
  })

  it('a deadline firing mid-body stops the stream with DEADLINE_EXCEEDED and the upstream sees the client leave', async () => {
    // 20 chunks, one every 25 ms: never idle long enough for the body limit, but 0.5 s in all.
    const server = await serve({ type: 'stream', chunks: 20, intervalMs: 25 })
    const deadline = Deadline.after(150)
    const res = await client({ bodyTimeoutMs: 1000 })(server.url, { deadline })
    const reader = res.body!.getReader()
    let bytes = 0
    const error = await rejection(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) return
          bytes += value.byteLength
        }
      })(),
    )
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(error).toBe(deadline.reason)
    expect(bytes).toBeGreaterThan(0)
    expect(bytes).toBeLessThan(20 * 16)
    const gone = await server.clientGone(0)
    expect(gone.workingWhenClientLeft).toBe(true)
  })
})

describe('the caller ends it', () => {
  it.each([
    {
      where: 'init.signal',
      call: (url: string, signal: AbortSignal) =>
        client()(url, { signal, deadline: Deadline.after(5000) }),
    },
    {
      where: 'an undici Request’s own signal',
      call: (url: string, signal: AbortSignal) =>
        client()(new Request(url, { signal }), { deadline: Deadline.after(5000) }),
    },
  ])(
    'an abort through $where rejects with its reason, at once, and is not retried',
    async ({ call }) => {
      const server = await serve({ type: 'hang' })
      events = recordEgress()
      const controller = new AbortController()
      const pending = call(server.url, controller.signal)
      await server.request(0)
      const reason = new ClientClosedError()
      controller.abort(reason)
      expect(await rejection(pending)).toBe(reason)
      await server.clientGone(0)
      expect(server.records).toHaveLength(1)
      expect(events.retries).toHaveLength(0)
    },
  )

  it('a null init is no init, as for fetch()', async () => {
    const server = await serve({ type: 'respond', body: 'ok' })
    expect(await (await client()(server.url, null)).text()).toBe('ok')
  })

  it.each([
    { kind: 'a deadline', make: () => Deadline.after(5000) },
    // No expiry, no timer of its own: its cancel must still reach the request.
    { kind: 'a Deadline.never()', make: () => Deadline.never() },
  ])(
    '$kind cancelled because the client closed stops the request at once with that ClientClosedError',
    async ({ make }) => {
      const server = await serve({ type: 'hang' })
      const deadline = make()
      const pending = client()(server.url, { deadline })
      await server.request(0)
      const reason = new ClientClosedError()
      const cancelledAt = performance.now()
      deadline.cancel(reason)
      expect(await rejection(pending)).toBe(reason)
      // At once, not when the hanging server gives up (10 s).
      expect(performance.now() - cancelledAt).toBeLessThan(1000)
      const gone = await server.clientGone(0)
      expect(gone.workingWhenClientLeft).toBe(true)
    },
  )
})
