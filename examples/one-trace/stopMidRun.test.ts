import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A Ctrl-C or a supervisor's SIGTERM while the example runs: its handler
// closes BullMQ's connections under the run, whose job then cannot be added.
// The run went on regardless: it printed the edge's 500 (an HTML stack
// trace) as the answer, budgets of NaN ms and a waterfall of the failed
// calls, and could end the process before Redis was stopped.
it('one-trace: a SIGTERM before its request exits 143 with nothing printed, the request failed by the stop not drawn as a trace', async (ctx) => {
  const { redisAvailable } = await import('@hourglass/testkit')
  if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
  // Sends the SIGTERM as the example waits for its QueueEvents, before its request.
  const run = await runExampleWith(
    import.meta.url,
    '../bullmq-queue/stopBeforeFirstJob.mjs',
    'otel',
  )
  expect({ code: run.code, signal: run.signal, stdout: run.stdout }).toEqual({
    code: 143,
    signal: null,
    stdout: '',
  })
})
