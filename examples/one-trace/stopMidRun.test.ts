import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { assertBuilt, runNode } from '../../test/cli/runNode.js'

// A Ctrl-C or a supervisor's SIGTERM while the example runs: its handler
// closes BullMQ's connections under the run, whose job then cannot be added.
// The run went on regardless: it printed the edge's 500 (an HTML stack
// trace) as the answer, budgets of NaN ms and a waterfall of the failed
// calls, and could end the process before Redis was stopped.
it('one-trace: a SIGTERM before its request exits 143 with nothing printed, the request failed by the stop not drawn as a trace', async (ctx) => {
  assertBuilt(fileURLToPath(new URL('../../packages/otel/dist/index.js', import.meta.url)))
  const { redisAvailable } = await import('@hourglass/testkit')
  if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
  const run = await runNode(
    [
      // Sends the SIGTERM as the example waits for its QueueEvents, before its request.
      '--import',
      fileURLToPath(new URL('../bullmq-queue/stopBeforeFirstJob.mjs', import.meta.url)),
      fileURLToPath(new URL('./index.mjs', import.meta.url)),
    ],
    { killAfterMs: 20_000 },
  )
  expect({ code: run.code, signal: run.signal, stdout: run.stdout }).toEqual({
    code: 143,
    signal: null,
    stdout: '',
  })
})
