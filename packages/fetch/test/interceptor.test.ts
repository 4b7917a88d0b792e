import diagnostics from 'node:diagnostics_channel'
import {
  ClientClosedError,
  Deadline,
  isDeadlineExceeded,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createConnector,
  type DeadlineDispatchOptions,
  deadlineInterceptor,
  isHeadersTimeout,
  type LookupFunction,
} from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  closers.push(server)
  return server
}
function agent(options: Parameters<typeof deadlineInterceptor>[0] = {}) {
  const base = new Agent({ connect: createConnector(options) })
  closers.push(base)
  return base.compose(deadlineInterceptor(options))
}

describe('deadlineInterceptor with undici.request', () => {
  it('propagates the current deadline as x-deadline-remaining-ms', async () => {
    const server = await serve({ type: 'respond', body: 'hi' })
    const dispatcher = agent()
    const deadline = Deadline.after(800)
    const { body } = await runWithDeadline(deadline, () => request(server.url, { dispatcher }))
    expect(await body.text()).toBe('hi')
    const sent = Number(server.records[0]?.headers['x-deadline-remaining-ms'])
    expect(sent).toBeGreaterThan(500)
    expect(sent).toBeLessThanOrEqual(800)
  })

  it('takes an explicit deadline in the dispatch options and stops with DEADLINE_EXCEEDED', async () => {
    const server = await serve({ type: 'hang' })
    const options = {
      dispatcher: agent(),
      deadline: Deadline.after(150),
    } as DeadlineDispatchOptions
    const error = await rejection(request(server.url, options as Parameters<typeof request>[1]))
    expect(isDeadlineExceeded(error)).toBe(true)
    expect((await server.clientGone(0)).workingWhenClientLeft).toBe(true)
  })

  it('retries a headers timeout with 0 bytes once for GET, transparently to the caller', async () => {
    events = recordEgress()
    const server = await serve((_r, i) =>
      i === 0 ? { type: 'hang' } : { type: 'respond', body: 'again' },
    )
    const { statusCode, body } = await request(server.url, {
      dispatcher: agent({ headersTimeoutMs: 150 }),
    })
    expect(statusCode).toBe(200)
    expect(await body.text()).toBe('again')
    expect(events.retries).toMatchObject([{ reason: 'HEADERS_TIMEOUT', attempt: 2 }])
  })

  it('does not retry a POST headers timeout', async () => {
    const server = await serve((_r, i) => (i === 0 ? { type: 'hang' } : { type: 'respond' }))
    const error = await rejection(
      request(server.url, {
        method: 'POST',
        body: 'x',
        dispatcher: agent({ headersTimeoutMs: 150 }),
      }),
    )
    expect(isHeadersTimeout(error)).toBe(true)
    expect(server.records).toHaveLength(1)
  })

  it('a pending retry ends at once when the caller aborts, and nothing is sent after that', async () => {
    events = recordEgress()
    const server = await serve((_r, i) =>
      i === 0 ? { type: 'retry-after', status: 503, retryAfter: 1 } : { type: 'respond' },
    )
    // The interceptor's waits run on a clock that moves only when told to.
    const clock = new ManualClock(performance.now())
    const controller = new AbortController()
    const retrying = new Promise<void>((resolve) => {
      diagnostics.subscribe('hourglass:egress:retry', function onRetry() {
        diagnostics.unsubscribe('hourglass:egress:retry', onRetry)
        resolve()
      })
    })
    const pending = request(server.url, {
      dispatcher: agent({ clock, retry: { statuses: [503] } }),
      signal: controller.signal,
    })
    await retrying // the 503 came back and a retry after 1 s was decided
    controller.abort()
    const error = await rejection(pending)
    expect((error as Error).name).toBe('AbortError')
    // Had the retry survived the abort, moving past its wait would send it now,
    // ahead of the control request below on the same server.
    clock.advance(2000)
    const control = await request(server.url, { dispatcher: agent() })
    await control.body.text()
    expect(server.records).toHaveLength(2) // the 503, then the control: no retry
  })

  it('a pending retry ends at once when the deadline ends (here: cancelled), and nothing is sent after that', async () => {
    const server = await serve((_r, i) =>
      i === 0 ? { type: 'retry-after', status: 503, retryAfter: 1 } : { type: 'respond' },
    )
    const clock = new ManualClock(performance.now())
    const deadline = Deadline.after(5000, { clock })
    const retrying = new Promise<void>((resolve) => {
      diagnostics.subscribe('hourglass:egress:retry', function onRetry() {
        diagnostics.unsubscribe('hourglass:egress:retry', onRetry)
        resolve()
      })
    })
    const pending = request(server.url, {
      dispatcher: agent({ clock, retry: { statuses: [503] } }),
      deadline,
    } as Parameters<typeof request>[1])
    await retrying
    const reason = new ClientClosedError()
    deadline.cancel(reason) // e.g. the inbound client left: the deadline ends mid-wait
    expect(await rejection(pending)).toBe(reason)
    clock.advance(2000)
    const control = await request(server.url, { dispatcher: agent() })
    await control.body.text()
    expect(server.records).toHaveLength(2)
  })

  it('retries a fast connect failure once', async () => {
    events = recordEgress()
    const server = await serve({ type: 'respond', body: 'up' })
    const answers = ['127.0.0.2', '127.0.0.1']
    const lookup: LookupFunction = (_h, _o, cb) => cb(null, answers.shift()!, 4)
    const { body } = await request(`http://svc.test:${server.port}/`, {
      dispatcher: agent({ lookup }),
    })
    expect(await body.text()).toBe('up')
    expect(events.retries).toMatchObject([{ reason: 'CONNECT_FAILED' }])
  })
})
