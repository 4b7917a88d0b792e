import { addWithDeadline, withDeadline } from '@hourglass/bullmq'
import { Deadline } from '@hourglass/core'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { SpanStatusCode } from '@opentelemetry/api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { useBullmqQueues } from './helpers/bullmqQueues.js'
import { setupOtel } from './helpers/otel.js'

// A worker that loses a job's lock stops the attempt (bullmq's onLockLost):
// another worker may be running the job. Its span must say so — an error, not
// a span left UNSET as if the attempt had ended well. The lock is deleted by
// hand, as if it had expired while the worker stalled.

const bull = useBullmqQueues('otel-lock')
let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({ tracerProvider: otel.tracerProvider })
})
afterEach(async () => {
  try {
    await bull.closeAll()
  } finally {
    stop()
    await otel.shutdown()
  }
})

describe.skipIf(!bull.available)('instrumentDeadlines: a job whose lock was lost', () => {
  it('ends its span ERROR, outcome lock_lost, error.type JOB_LOCK_LOST', async () => {
    const { queue, name } = await bull.queue()
    let running!: () => void
    const started = new Promise<void>((resolve) => {
      running = resolve
    })
    bull.worker(
      name,
      withDeadline(async (_job, _token, signal) => {
        running()
        // Runs until stopped: the minute's deadline is not what ends it.
        await new Promise((_, reject) =>
          signal!.addEventListener('abort', () => reject(signal!.reason)),
        )
      }),
      true,
      { lockDuration: 400 },
    )
    const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    await started
    const { Redis } = await import('ioredis')
    const client = new Redis(bull.port(), '127.0.0.1')
    try {
      await client.del(`bull:${name}:${job.id}:lock`)
    } finally {
      client.disconnect()
    }
    const spans = await otel.spansWhere((all) => all.some((s) => s.name === `process ${name}`))
    const span = spans.find((s) => s.name === `process ${name}`)!
    expect(span.attributes['hourglass.deadline.outcome']).toBe('lock_lost')
    expect(span.attributes['error.type']).toBe('JOB_LOCK_LOST')
    expect(span.status.code).toBe(SpanStatusCode.ERROR)
  })
})
