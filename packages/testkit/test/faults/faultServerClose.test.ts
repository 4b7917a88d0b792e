import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import type { RequestRecord } from '../../src/index.js'
import { faultServer, recordOf, recordRequests, tcpFaultServer } from '../../src/index.js'

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close().catch(() => {})))
  closers = []
})

/** A GET resolving to its status and body, or to the error that ended it. */
function get(url: string): Promise<{ status: number; body: string } | NodeJS.ErrnoException> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { agent: false }, (res) => {
      let body = ''
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString()
      })
      res.on('end', () => resolve({ status: res.statusCode!, body }))
      res.on('error', resolve)
    })
    req.on('error', resolve)
    req.end()
  })
}

describe('faultServer close()', () => {
  it('is not the client leaving: a request still being worked on is serverAborted, not gone', async () => {
    // A service that never aborts its upstream call: only close() ends it.
    // close() used to record the client as gone while the server was working
    // (clientGoneAt set, workingWhenClientLeft true, clientGone(0) resolved),
    // so a zombie-work test passed on exactly the leak it exists to catch.
    const server = await faultServer({ type: 'respond', body: 'late', delayMs: 5000 })
    const answer = get(server.url)
    await server.request(0)
    let gone = false
    void server.clientGone(0).then(() => {
      gone = true
    })
    await server.close()
    await answer
    await server.idle()
    const record = server.records[0]!
    expect(record).toMatchObject({
      clientGoneAt: undefined,
      workingWhenClientLeft: undefined,
      serverAborted: true,
      finishedAt: undefined,
    })
    expect(gone).toBe(false)
  })

  it('leaves an answered request as it was', async () => {
    const server = await faultServer({ type: 'respond', body: 'ok' })
    expect(await get(server.url)).toEqual({ status: 200, body: 'ok' })
    await server.close()
    expect(server.records[0]).toMatchObject({ serverAborted: false, clientGoneAt: undefined })
  })

  it('an IPv6 host gives a URL with the address in brackets', async () => {
    // It was http://::1:PORT, which no URL parser takes.
    const server = await faultServer({ type: 'respond', body: 'six' }, { host: '::1' })
    closers.push(server)
    expect(server.url).toBe(`http://[::1]:${server.port}`)
    expect(await get(server.url)).toEqual({ status: 200, body: 'six' })
  })
})

describe('recordRequests', () => {
  it('recordOf(req) works inside a handler that was listening before recording began', async () => {
    // The app's own 'request' listener ran first, before the record existed.
    let seen: RequestRecord | undefined
    const server = createServer((req, res) => {
      seen = recordOf(req)
      res.end('ok')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) })
    const log = recordRequests(server)
    const { port } = server.address() as AddressInfo
    expect(await get(`http://127.0.0.1:${port}/`)).toEqual({ status: 200, body: 'ok' })
    expect(seen).toBe(log.records[0])
    expect(seen).toMatchObject({ index: 0, url: '/' })
    server.closeAllConnections()
  })
})

describe('faultServer: a Fault with a bad field', () => {
  it('from a plan function: the request gets a 500 naming the field, close() rejects with it', async () => {
    // Each threw inside the fault's timer: an uncaught exception, and a request that hung.
    const faults = [
      { type: 'respond', status: 1000 },
      { type: 'respond', headers: { 'x-a': 'one\ntwo' } },
      { type: 'respond', body: 123 },
      { type: 'stream', chunks: 1, intervalMs: 1, chunkBytes: -1 },
      { type: 'retry-after', status: 429, retryAfter: 'soon' },
    ] as never[]
    const server = await faultServer((_, index) => faults[index]!)
    const answers = []
    for (let i = 0; i < faults.length; i++) answers.push(await get(server.url))
    expect(answers.map((a) => ('status' in a ? a.status : a.code))).toEqual([
      500, 500, 500, 500, 500,
    ])
    const bodies = answers.map((a) => ('body' in a ? a.body : ''))
    expect(bodies[0]).toBe(
      "faultServer: the plan's respond Fault for request 0 is invalid: status must be an HTTP status (a whole number 100–999), got 1000",
    )
    expect(bodies[1]).toMatch(
      /^faultServer: the plan's respond Fault for request 1 is invalid: headers\["x-a"\] cannot be sent: /,
    )
    expect(bodies[2]).toMatch(/request 2 is invalid: body must be a string, got 123$/)
    expect(bodies[3]).toMatch(
      /request 3 is invalid: chunkBytes must be a whole number ≥ 0, got -1$/,
    )
    expect(bodies[4]).toMatch(
      /request 4 is invalid: retryAfter must be seconds ≥ 0 or a valid Date, got "soon"$/,
    )
    await expect(server.close()).rejects.toThrow(bodies[0])
  })

  it('as a fixed plan (or setPlan): refused at once, naming the field', async () => {
    await expect(faultServer({ type: 'respond', status: 1000 })).rejects.toThrow(
      new TypeError(
        "faultServer: the plan's respond Fault is invalid: status must be an HTTP status (a whole number 100–999), got 1000",
      ),
    )
    const server = await faultServer({ type: 'hang' })
    closers.push(server)
    expect(() => server.setPlan({ type: 'respond', body: 123 } as never)).toThrow(
      "faultServer: the plan's respond Fault is invalid: body must be a string, got 123",
    )
  })

  it('a field its kind of Fault does not read is refused, with the one meant (delayMS had no delay)', async () => {
    await expect(faultServer({ type: 'respond', delayMS: 100 } as never)).rejects.toThrow(
      new TypeError(
        `faultServer: the plan's respond Fault is invalid: unknown field "delayMS" (did you mean delayMs?); a respond Fault takes type, status, headers, body, delayMs`,
      ),
    )
    await expect(faultServer({ type: 'hang', delayMs: 5 } as never)).rejects.toThrow(
      /hang Fault is invalid: unknown field "delayMs"; a hang Fault takes type$/,
    )
  })

  it('an async plan is named as one, not as "got {}"', async () => {
    const server = await faultServer((async () => ({ type: 'respond' })) as never)
    const answer = await get(server.url)
    expect(answer).toEqual({
      status: 500,
      body: 'faultServer: the plan gave no Fault for request 0 (got a Promise: a plan gives its Fault synchronously, it cannot be async)',
    })
    await expect(server.close()).rejects.toThrow('got a Promise')
  })

  it('an async plan that rejects: the same 500, and no unhandled rejection', async () => {
    const server = await faultServer((async () => {
      throw new Error('async failure')
    }) as never)
    expect(await get(server.url)).toMatchObject({ status: 500 })
    await expect(server.close()).rejects.toThrow('got a Promise')
  })
})

describe('faultServer: a plan that throws what has no readable message', () => {
  const hostile: [string, () => unknown][] = [
    ['an object with no prototype', () => Object.create(null)],
    [
      'a revoked Proxy',
      () => {
        const { proxy, revoke } = Proxy.revocable(new Error('x'), {})
        revoke()
        return proxy
      },
    ],
  ]
  it.each(hostile)(
    '%s: its own 500, naming the request; close() rejects with it',
    async (_, make) => {
      // Before: String() of it threw, and the 500 said "Cannot convert object to primitive value".
      const server = await faultServer(() => {
        throw make()
      })
      expect(await get(server.url)).toEqual({
        status: 500,
        body: 'faultServer: the plan threw for request 0: an object',
      })
      await expect(server.close()).rejects.toThrow('the plan threw for request 0: an object')
    },
  )
})

describe('tcpFaultServer options', () => {
  it('refuses an unknown option or mode instead of behaving as silent', async () => {
    await expect(tcpFaultServer({ mode: 'reset', afterMS: 5 } as never)).rejects.toThrow(
      'unknown option "afterMS" (did you mean afterMs?); tcpFaultServer() takes mode, afterMs',
    )
    await expect(tcpFaultServer({ mode: 'rest' } as never)).rejects.toThrow(
      new TypeError(`tcpFaultServer: mode must be 'silent' or 'reset', got "rest"`),
    )
    await expect(tcpFaultServer({ mode: 'reset', afterMs: '5' } as never)).rejects.toThrow(
      'tcpFaultServer: afterMs must be a number of ms ≥ 0, got 5',
    )
  })
})
