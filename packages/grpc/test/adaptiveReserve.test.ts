import type { handleUnaryCall } from '@grpc/grpc-js'
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

it('without reserveMs the handler keeps back the adaptive reserve (here raised by late answers); reserveMs fixes it', async () => {
  // This process's last timeout answers were flushed 60 ms after their deadlines.
  for (let i = 0; i < 64; i++) recordAnswerLateness(60)
  expect(adaptiveReserveMs()).toBeGreaterThanOrEqual(62)
  const starts = record<GrpcServerStartMessage>(grpcChannels.serverStart)
  try {
    for (const [i, reserveMs] of [undefined, 10].entries()) {
      server = await startServer({ unary: answer }, [deadlineServerInterceptor({ reserveMs })])
      client = connect(server.address)
      const result = await unary(client, {}, { deadline: Date.now() + 1000 })
      expect(result.error).toBeUndefined()
      await starts.count(i + 1)
      const start = starts.messages[i]!
      // Rounded: the two budgets are floating-point ms. `budgetMs` is the
      // budget the call arrived with; the handler's deadline also leaves out
      // the whole ms spent since its arrival (a loaded machine: a few).
      const kept = Math.round((start.budgetMs - start.deadline.budgetMs) * 1000) / 1000
      if (reserveMs === undefined) {
        expect(kept).toBeGreaterThanOrEqual(62)
        expect(kept).toBeLessThanOrEqual(MAX_RESERVE_MS + 50)
      } else {
        expect(kept).toBeGreaterThanOrEqual(10)
        expect(kept).toBeLessThan(62)
      }
      client.close()
      await server.close()
      client = undefined
      server = undefined
    }
  } finally {
    starts.stop()
  }
})
