import { expect, it } from 'vitest'
import { runExampleWith } from '../../test/support/runExampleWith.js'

// A Ctrl-C or a supervisor's SIGTERM while the example runs: its handler
// closes BullMQ's connections under the run, which fails on its next Redis
// command. That failure reached the top level and ended the process at once
// (exit 1, ioredis's "Connection is closed." stack), before the handler had
// stopped Redis or exited as the signal would have.
it('bullmq-queue: a SIGTERM before its first job exits 143 with nothing printed, the run stopped under it reported by no stack', async (ctx) => {
  const { redisAvailable } = await import('@hourglass/testkit')
  if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
  // Sends the SIGTERM as the example waits for its QueueEvents: its first job not added yet.
  const run = await runExampleWith(import.meta.url, './stopBeforeFirstJob.mjs', 'bullmq')
  expect({ code: run.code, signal: run.signal, stderr: run.stderr, stdout: run.stdout }).toEqual({
    code: 143,
    signal: null,
    stderr: '',
    stdout: '',
  })
})
