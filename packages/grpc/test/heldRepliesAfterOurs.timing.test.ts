import {
  InterceptingCall,
  type Interceptor,
  Metadata,
  type StatusObject,
  status,
} from '@grpc/grpc-js'
import { afterEach, expect, it } from 'vitest'
import { deadlineInterceptor } from '../src/index.js'
import {
  connect,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// An interceptor after ours that holds what comes up from below past the
// call's own deadline or `defaultMs` (an async response-header check, a
// decrypt, a metrics flush before the status) holds an answer grpc-js had
// in time: it is the call's answer. A timer of ours at that deadline (tried
// for the call held at `start` by such an interceptor, whose status grpc-js
// drops) answered DEADLINE_EXCEEDED over it — a write the server had done
// reported as expired — and could not tell the two apart: taken back.

let server: RunningServer | undefined
let client: WorkClientApi | undefined

afterEach(async () => {
  client?.close()
  await server?.close()
})

/** The codes of the statuses `held` saw come up from below, before holding them. */
const below: number[] = []

/** Holds, for `holdMs`, what comes up from below: `what` names which. */
function held(holdMs: number, what: 'everything' | 'status'): Interceptor {
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, _listener, next) => {
        const later =
          <T>(extra: number) =>
          (value: T, pass: (value: T) => void) => {
            setTimeout(() => pass(value), holdMs + extra)
          }
        const holdStatus = later<StatusObject>(what === 'everything' ? 2 : 0)
        const onReceiveStatus = (value: StatusObject, pass: (value: StatusObject) => void) => {
          below.push(value.code)
          holdStatus(value, pass)
        }
        next(
          metadata,
          what === 'everything'
            ? {
                onReceiveMetadata: later(0),
                onReceiveMessage: later(1),
                onReceiveStatus,
              }
            : { onReceiveStatus },
        )
      },
    })
}

/**
 * `call` until grpc-js had the server's answer within the call's 50 ms (a
 * status from below other than its own timer's DEADLINE_EXCEEDED; the server
 * sends none): the round trip is a few ms, but a loaded machine that stalls
 * this process 50 ms in the middle of it lets grpc-js's timer answer first,
 * and such a call has no answer to hold. At most three tries.
 */
async function answeredInTime<T>(call: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    below.length = 0
    const result = await call()
    if (below[0] !== status.DEADLINE_EXCEEDED || tries === 3) return result
  }
}

/** Connected first: the calls under test answer well within their 50 ms. */
async function connected(interceptors: Interceptor[], serverStream?: (call: never) => void) {
  server = await startServer({
    unary: (_call: unknown, callback: (error: null, value: unknown) => void) =>
      callback(null, { ok: true }),
    ...(serverStream === undefined ? {} : { serverStream }),
  })
  client = connect(server.address, interceptors)
  await unary(client, {}, { deadline: Date.now() + 10_000 }, new Metadata())
  return client
}

it('unary with defaultMs 50: an OK given at once, its headers, message and status held 100 ms, is the answer', async () => {
  const c = await connected([deadlineInterceptor({ defaultMs: 50 }), held(100, 'everything')])
  const result = await answeredInTime(() => unary(c, {}, {}, new Metadata()))
  expect(result.error).toBeUndefined()
  expect(result.value).toEqual({ ok: true })
})

it('unary with its own deadline option: an OK held 100 ms is the answer', async () => {
  const c = await connected([deadlineInterceptor(), held(100, 'everything')])
  const result = await answeredInTime(() =>
    unary(c, {}, { deadline: Date.now() + 50 }, new Metadata()),
  )
  expect(result.error).toBeUndefined()
  expect(result.value).toEqual({ ok: true })
})

/** How a server stream ends: its status code (0 for OK). */
function streamEnd(c: WorkClientApi, deadline: number): Promise<number> {
  return new Promise((resolve) => {
    const call = c.serverStream({}, new Metadata(), { deadline })
    call.on('data', () => {})
    call.on('error', (error: { code: number }) => resolve(error.code))
    call.on('status', (ended: { code: number }) => {
      if (ended.code === status.OK) resolve(0)
    })
  })
}

for (const [which, end, code] of [
  [
    'NOT_FOUND before any write',
    (call: { emit(event: 'error', error: unknown): void }) =>
      call.emit('error', { code: status.NOT_FOUND, details: 'gone' }),
    status.NOT_FOUND,
  ],
  ['OK with no messages', (call: { end(): void }) => call.end(), status.OK],
] as const) {
  it(`a server stream with its own deadline option, ended at once with ${which} (a status alone, no headers), held 120 ms: that status`, async () => {
    const c = await connected([deadlineInterceptor(), held(120, 'status')], end as never)
    expect(await answeredInTime(() => streamEnd(c, Date.now() + 50))).toBe(code)
  })
}
