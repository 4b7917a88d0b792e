import { createHook } from 'node:async_hooks'
import { InterceptingCall, type Interceptor, Metadata, status } from '@grpc/grpc-js'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { deadlineInterceptor } from '../src/index.js'
import {
  connect,
  type RunningServer,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// An interceptor before ours that answers a call itself, never starting the
// one below (a circuit breaker that is open, a cache hit): ours had already
// made the grpc-js call below, with its gRPC deadline (`defaultMs`, or what
// the caller had left), and grpc-js arms that deadline's timer when it makes
// the call. Never started, never ended, nothing cleared it: one live timer
// per refused call, each holding the process open (a CLI waited 30 s to exit
// after its breaker had refused everything). Without ours: none.

let server: RunningServer
let client: WorkClientApi

/** Answers UNAVAILABLE without starting the call below. */
const openBreaker: Interceptor = (options, nextCall) =>
  new InterceptingCall(nextCall(options), {
    start: (_metadata, listener) => {
      setImmediate(() =>
        listener.onReceiveStatus({
          code: status.UNAVAILABLE,
          details: 'breaker open',
          metadata: new Metadata(),
        }),
      )
    },
  })

beforeAll(async () => {
  server = await startServer({
    unary: (_call: unknown, callback: (error: null, value: unknown) => void) => callback(null, {}),
    serverStream: (call: { end(): void }) => call.end(),
    bidi: (call: { end(): void }) => call.end(),
  })
  client = connect(server.address, [openBreaker, deadlineInterceptor()])
})

afterAll(async () => {
  client.close()
  await server.close()
})

/** The timers `work` leaves live once its calls are over (a turn later: destroy hooks are queued). */
async function timersLeftBy(work: () => Promise<void>): Promise<number> {
  const live = new Set<number>()
  const hook = createHook({
    init: (id, type) => {
      if (type === 'Timeout') live.add(id)
    },
    destroy: (id) => {
      live.delete(id)
    },
  })
  hook.enable()
  try {
    await work()
    await new Promise<void>((resolve) => setImmediate(resolve))
    return live.size
  } finally {
    hook.disable()
  }
}

async function refusedThrice(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const { error } = await unary(client, {})
    expect(error?.code).toBe(status.UNAVAILABLE)
    expect(error?.details).toBe('breaker open')
  }
}

it('calls with no deadline that an interceptor before ours answers leave no timer behind', async () => {
  expect(await timersLeftBy(refusedThrice)).toBe(0)
})

it("calls under the caller's deadline that an interceptor before ours answers leave no timer behind", async () => {
  const deadline = Deadline.after(60_000, { clock: new ManualClock() })
  expect(await timersLeftBy(() => runWithDeadline(deadline, refusedThrice))).toBe(0)
  deadline.dispose()
})

/** The status a response stream ends with, read as a caller does ('data' asks grpc-js to read). */
function readToError(call: NodeJS.EventEmitter): Promise<{ code: number; details: string }> {
  return new Promise((resolve) => {
    call.on('data', () => {})
    call.on('error', resolve)
  })
}

it("response streams read under the caller's deadline that an interceptor before ours answers leave no timer behind", async () => {
  // grpc-js passes a read (startRead) straight down, past a start held
  // above: it made the call below before its start, timer and all.
  const deadline = Deadline.after(60_000, { clock: new ManualClock() })
  const ended: string[] = []
  const left = await timersLeftBy(() =>
    runWithDeadline(deadline, async () => {
      for (const call of [
        client.serverStream({}, new Metadata(), {}),
        client.bidi(new Metadata(), {}),
      ]) {
        const error = await readToError(call)
        ended.push(`${status[error.code]}: ${error.details}`)
      }
    }),
  )
  deadline.dispose()
  expect(ended).toEqual(['UNAVAILABLE: breaker open', 'UNAVAILABLE: breaker open'])
  expect(left).toBe(0)
})
