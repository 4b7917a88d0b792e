import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { Agent, type Dispatcher, interceptors, MockAgent, RetryAgent, request } from 'undici'
import { describe, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor } from '../src/index.js'
import { useCleanup } from './support/useCleanup.js'

const { keep, record } = useCleanup()

/**
 * A server that records the headers of every request and answers the
 * first with `first` — after moving the deadline's clock on by `tookMs`,
 * the time the server (and the back-off after it) took — and the rest 200.
 */
async function serve(
  clock: ManualClock,
  tookMs: number,
  first: (res: ServerResponse) => void,
): Promise<{ url: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = []
  const server = createServer((req, res) => {
    seen.push(req.headers)
    if (seen.length === 1) {
      clock.advance(tookMs)
      first(res)
    } else res.end('ok')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  keep({ close: () => void server.close() })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

const busy = (res: ServerResponse) => {
  res.statusCode = 503
  res.end()
}

/** undici's retry interceptor as a user composes it, with a back-off too short to wait on. */
const undiciRetry = { statusCodes: [503], minTimeout: 1, maxTimeout: 1 }

describe('a request a layer beneath sends again carries what is left then', () => {
  it("undici's retry interceptor beneath the interceptor: its retry is told the time its first send took off", async () => {
    const clock = new ManualClock()
    const server = await serve(clock, 1000, busy)
    const events = record()
    const agent = keep(new Agent())
    const dispatcher = agent.compose(interceptors.retry(undiciRetry), deadlineInterceptor())
    const deadline = Deadline.after(3000, { clock })
    const res = await request(`${server.url}/item`, {
      dispatcher,
      deadline,
      headers: { accept: 'text/plain' },
    } as never)
    expect(res.statusCode).toBe(200)
    await res.body.text()
    // Before: both said 3000, the retry 1 s after the first send had begun.
    expect(server.seen.map((h) => h['x-deadline-remaining-ms'])).toEqual(['3000', '2000'])
    expect(server.seen[1]?.accept).toBe('text/plain')
    // One attempt of ours (undici's retry is inside it), named with what it wrote.
    expect(events.attempts.map((a) => a.headerMs)).toEqual([3000])
  })

  it('a RetryAgent given to createFetch: its retry is told what is left, grpc-timeout too', async () => {
    const clock = new ManualClock()
    const server = await serve(clock, 1500, busy)
    const fetch = keep(createFetch({ dispatcher: new RetryAgent(new Agent(), undiciRetry) }))
    const res = await fetch(`${server.url}/item`, {
      deadline: Deadline.after(3000, { clock }),
      headers: { 'grpc-timeout': '10S' },
    })
    expect(res.status).toBe(200)
    await res.text()
    expect(server.seen.map((h) => h['x-deadline-remaining-ms'])).toEqual(['3000', '1500'])
    expect(server.seen.map((h) => h['grpc-timeout'])).toEqual(['3000m', '1500m'])
  })

  it("undici's redirect interceptor beneath the interceptor: the hop is told what is left when it is made", async () => {
    const clock = new ManualClock()
    const server = await serve(clock, 400, (res) => {
      res.statusCode = 302
      res.setHeader('location', '/moved')
      res.end()
    })
    const agent = keep(new Agent())
    const dispatcher = agent.compose(
      interceptors.redirect({ maxRedirections: 1 }),
      deadlineInterceptor(),
    )
    const res = await request(`${server.url}/item`, {
      dispatcher,
      deadline: Deadline.after(3000, { clock }),
    } as never)
    expect(res.statusCode).toBe(200)
    await res.body.text()
    // Before: the hop went out saying 3000, the first server's 400 ms not taken off.
    expect(server.seen.map((h) => h['x-deadline-remaining-ms'])).toEqual(['3000', '2600'])
  })

  it("what a MockAgent's call history kept says what was sent, after the call and the deadline's dispose", async () => {
    const clock = new ManualClock()
    const mock = keep(new MockAgent({ enableCallHistory: true }))
    mock.disableNetConnect()
    mock.get('http://svc.test').intercept({ path: '/item' }).reply(200, 'mocked').times(2)
    const deadline = Deadline.after(3000, { clock })
    const dispatcher = mock.compose(deadlineInterceptor())
    const res = await request('http://svc.test/item', {
      dispatcher,
      deadline,
      headers: { accept: 'text/plain' },
    } as never)
    await res.body.text()
    const fetch = keep(createFetch({ dispatcher: mock }))
    clock.advance(1000)
    expect(await (await fetch('http://svc.test/item', { deadline })).text()).toBe('mocked')
    clock.advance(500)
    deadline.dispose()
    const [viaInterceptor, viaFetch] = mock.getCallHistory()?.calls() ?? []
    expect(headerOf(viaInterceptor?.headers, 'x-deadline-remaining-ms')).toBe('3000')
    expect(headerOf(viaFetch?.headers, 'x-deadline-remaining-ms')).toBe('2000')
  })

  it('an observe-only deadline passed by the time of the resend: the resend carries none', async () => {
    const clock = new ManualClock()
    const server = await serve(clock, 1000, busy)
    const agent = keep(new Agent())
    const dispatcher = agent.compose(interceptors.retry(undiciRetry), deadlineInterceptor())
    const res = await request(`${server.url}/item`, {
      dispatcher,
      deadline: Deadline.after(500, { clock, observe: true }),
    } as never)
    expect(res.statusCode).toBe(200)
    await res.body.text()
    // What writeDeadline writes then: none for a dark-mode deadline that has passed.
    expect(server.seen.map((h) => h['x-deadline-remaining-ms'])).toEqual(['500', undefined])
  })
})

describe('the headers beneath, after review', () => {
  it('an interceptor beneath that writes the header in place (capping the budget it passes on) sends what it wrote', async () => {
    const clock = new ManualClock()
    const server = await serve(clock, 0, (res) => res.end('ok'))
    const capBudget: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
      // After a turn of the loop (a token awaited), as an async interceptor would.
      setImmediate(() => {
        const headers = opts.headers as Record<string, string>
        headers['x-deadline-remaining-ms'] = '1000'
        Object.assign(headers, { authorization: 'Bearer t' })
        dispatch(opts, handler)
      })
      return true
    }
    const agent = keep(new Agent())
    const res = await request(`${server.url}/item`, {
      dispatcher: agent.compose(capBudget, deadlineInterceptor()),
      deadline: Deadline.after(5000, { clock }),
      headers: { accept: 'x' },
    } as never)
    // Before: a TypeError, the header having a getter only.
    expect(res.statusCode).toBe(200)
    await res.body.text()
    expect(server.seen[0]).toMatchObject({
      'x-deadline-remaining-ms': '1000',
      authorization: 'Bearer t',
    })
  })

  for (const [given, ended] of [
    ['a record', 'expired'],
    ['no headers', 'expired'],
    ['a record', 'cancelled'],
    // The body's limit fires a ms before the deadline: the attempt ends as the deadline's.
    ['a record', 'expired, the phase limit a ms short of it'],
  ] as const) {
    it(`undici's resume of a broken body, sent after the deadline ended the call, is told nothing is left (${given}, ${ended})`, async () => {
      const clock = new ManualClock()
      const seen: IncomingHttpHeaders[] = []
      let sentResume = () => {}
      const resumed = new Promise<void>((resolve) => {
        sentResume = resolve
      })
      const server = createServer((req, res) => {
        seen.push(req.headers)
        if (seen.length === 1) {
          res.writeHead(200, { 'content-length': '10', etag: '"v1"' })
          res.write('01234', () => res.socket?.destroy())
        } else {
          res.writeHead(206, {
            'content-range': 'bytes 5-9/10',
            'content-length': '5',
            etag: '"v1"',
          })
          res.end('56789')
          sentResume()
        }
      })
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      keep({ close: () => void server.close() })
      const deadline = Deadline.after(300, { clock })
      const agent = keep(new Agent())
      const retry = interceptors.retry({
        errorCodes: ['UND_ERR_SOCKET', 'ECONNRESET'],
        // The deadline ends while undici waits to resume (its back-off).
        retry: (_error, _context, resume) => {
          if (ended !== 'cancelled') clock.advance(400)
          else deadline.cancel(new Error('the caller went away'))
          setImmediate(() => resume(null))
        },
      })
      const res = await request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/f`, {
        dispatcher: agent.compose(
          retry,
          deadlineInterceptor(ended.includes('phase') ? { bodyTimeoutMs: 299 } : {}),
        ),
        deadline,
        ...(given === 'a record' ? { headers: { accept: 'x' } } : {}),
      } as never)
      const read = await res.body.text().then(
        () => 'read',
        (e: { code?: string }) => e.code,
      )
      if (ended !== 'cancelled') expect(read).toBe('DEADLINE_EXCEEDED')
      else expect(read).not.toBe('read')
      await resumed
      // Before: the first send's 300 (settled as the attempt failed); with no
      // headers, none at all, and headers named "0" and "1" (a flat array spread).
      expect(seen.map((h) => h['x-deadline-remaining-ms'])).toEqual(['300', '0'])
      expect(seen[1]).not.toHaveProperty('0')
      expect(seen[1]?.range).toBe('bytes=5-9')
    })
  }
})

describe('array headers beneath, and the history of a failed attempt', () => {
  async function sentThrough(edit: (headers: string[]) => void, headers: string[]) {
    const clock = new ManualClock()
    const server = await serve(clock, 0, (res) => res.end('ok'))
    const layer: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
      // After a turn of the loop, as an async interceptor (a token fetched) would.
      setImmediate(() => {
        edit(opts.headers as string[])
        dispatch(opts, handler)
      })
      return true
    }
    const agent = keep(new Agent())
    const res = await request(`${server.url}/item`, {
      dispatcher: agent.compose(layer, deadlineInterceptor()),
      deadline: Deadline.after(5000, { clock }),
      headers,
    } as never)
    await res.body.text()
    return server.seen[0]
  }

  it('a pair unshifted or spliced into a flat array beneath moves the deadline header, not a neighbour into it', async () => {
    // Before: `x-deadline-remaining-ms: Bearer s3cret`, the credential moved through its slot.
    const unshifted = await sentThrough(
      (h) => h.unshift('x-first', 'v'),
      ['authorization', 'Bearer s3cret'],
    )
    expect(unshifted).toMatchObject({
      'x-deadline-remaining-ms': '5000',
      authorization: 'Bearer s3cret',
      'x-first': 'v',
    })
    const spliced = await sentThrough(
      (h) => h.splice(2, 0, 'authorization', 'Bearer t'),
      ['accept', 'text/plain', 'x-b', 'b'],
    )
    expect(spliced).toMatchObject({
      'x-deadline-remaining-ms': '5000',
      'x-b': 'b',
      authorization: 'Bearer t',
    })
    const grpc = await sentThrough(
      (h) => h.unshift('x-first', 'v'),
      ['grpc-timeout', '10S', 'accept', 'text/plain'],
    )
    expect(grpc).toMatchObject({
      'x-deadline-remaining-ms': '5000',
      'grpc-timeout': '5000m',
      accept: 'text/plain',
    })
  })

  it("a dark-mode deadline that passed during a successful attempt: the MockAgent's history still says what was sent", async () => {
    const clock = new ManualClock()
    const mock = keep(new MockAgent({ enableCallHistory: true }))
    mock.disableNetConnect()
    mock
      .get('http://svc.test')
      .intercept({ path: '/item' })
      .reply(200, () => {
        // The server took 5 s: the observe-only 3 s deadline passed, ending nothing.
        clock.advance(5000)
        return 'mocked'
      })
    const fetch = keep(createFetch({ dispatcher: mock }))
    const res = await fetch('http://svc.test/item', {
      deadline: Deadline.after(3000, { clock, observe: true }),
    })
    expect(await res.text()).toBe('mocked')
    const calls = mock.getCallHistory()?.calls() ?? []
    expect(calls.map((c) => headerOf(c.headers, 'x-deadline-remaining-ms'))).toEqual(['3000'])
  })

  it("what a MockAgent's history kept of a failed attempt says what was sent, however time moves on", async () => {
    const clock = new ManualClock()
    const mock = keep(new MockAgent({ enableCallHistory: true }))
    mock.disableNetConnect()
    const pool = mock.get('http://svc.test')
    pool
      .intercept({ path: '/item' })
      .replyWithError(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))
    pool.intercept({ path: '/item' }).reply(200, 'mocked')
    const deadline = Deadline.after(3000, { clock })
    const fetch = keep(createFetch({ dispatcher: mock }))
    expect(await (await fetch('http://svc.test/item', { deadline })).text()).toBe('mocked')
    const calls = mock.getCallHistory()?.calls() ?? []
    const sent = () => calls.map((c) => headerOf(c.headers, 'x-deadline-remaining-ms'))
    expect(sent()).toEqual(['3000', '3000'])
    // Before: the failed attempt's read live — 2000, then 0, then none once disposed.
    clock.advance(1000)
    expect(sent()).toEqual(['3000', '3000'])
    deadline.dispose()
    expect(sent()).toEqual(['3000', '3000'])
  })
})

/** A header's value in a record or a flat [name, value, …] array, as undici was handed them. */
function headerOf(headers: unknown, name: string): unknown {
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) if (headers[i] === name) return headers[i + 1]
    return undefined
  }
  return (headers as Record<string, unknown> | undefined)?.[name]
}
