import { performance } from 'node:perf_hooks'
import { type handleUnaryCall, ServerInterceptingCall, type ServerInterceptor } from '@grpc/grpc-js'
import { adaptiveReserveMs, MAX_RESERVE_MS, recordAnswerLateness } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import {
  deadlineServerInterceptor,
  type GrpcServerStartMessage,
  grpcChannels,
} from '../src/index.js'
import {
  connect,
  type RunningServer,
  record,
  startServer,
  unary,
  type WorkClientApi,
} from './support/grpc.js'

// Its own file: what the reserve learns is process-wide.
let server: RunningServer | undefined
let client: WorkClientApi | undefined
afterEach(async () => {
  client?.close()
  await server?.close()
})

const answer: handleUnaryCall<unknown, unknown> = (_call, callback) => callback(null, {})

/**
 * An interceptor ahead of ours, passing everything on: grpc-js calls every
 * interceptor's factory as the call arrives, in order, so `at` is when the
 * call arrived (a hair before ours stamps it) on the clock ours reads.
 */
function arrival(): { interceptor: ServerInterceptor; readonly at: number } {
  let at = Number.NaN
  return {
    interceptor: (_method, call) => {
      at = performance.now()
      return new ServerInterceptingCall(call)
    },
    get at() {
      return at
    },
  }
}

it('without reserveMs the handler keeps back the adaptive reserve (here raised by late answers); reserveMs fixes it', async () => {
  // This process's last timeout answers were flushed 60 ms after their deadlines.
  for (let i = 0; i < 64; i++) recordAnswerLateness(60)
  expect(adaptiveReserveMs()).toBeGreaterThanOrEqual(62)
  const starts = record<GrpcServerStartMessage>(grpcChannels.serverStart)
  // When each call's deadline was made: its server-start is published then.
  const made: number[] = []
  const onStart = () => made.push(performance.now())
  grpcChannels.serverStart.subscribe(onStart)
  try {
    for (const [i, reserveMs] of [undefined, 10].entries()) {
      const arrived = arrival()
      server = await startServer({ unary: answer }, [
        arrived.interceptor,
        deadlineServerInterceptor({ reserveMs }),
      ])
      client = connect(server.address)
      // 10 s of wall clock: the first call connects first, and the call must
      // arrive with more than the reserve left on a loaded machine.
      const result = await unary(client, {}, { deadline: Date.now() + 10_000 })
      expect(result.error).toBeUndefined()
      await starts.count(i + 1)
      const start = starts.messages[i]!
      // Rounded: the two budgets are floating-point ms. `budgetMs` is the
      // budget the call arrived with; the handler's deadline also leaves out
      // the whole ms spent since its arrival: at most those measured between
      // the call's arrival and its deadline being made (a loaded machine
      // that takes the CPU from this process there: tens), not an allowance.
      const kept = Math.round((start.budgetMs - start.deadline.budgetMs) * 1000) / 1000
      const spentAtMost = made[i]! - arrived.at
      expect(spentAtMost).toBeGreaterThanOrEqual(0)
      if (reserveMs === undefined) {
        expect(kept).toBeGreaterThanOrEqual(62)
        expect(kept).toBeLessThanOrEqual(MAX_RESERVE_MS + spentAtMost)
      } else {
        // Kept back: reserveMs, not the adaptive reserve (62 or more).
        expect(kept).toBeGreaterThanOrEqual(10)
        expect(kept).toBeLessThanOrEqual(10 + spentAtMost)
      }
      client.close()
      await server.close()
      client = undefined
      server = undefined
    }
  } finally {
    grpcChannels.serverStart.unsubscribe(onStart)
    starts.stop()
  }
})
