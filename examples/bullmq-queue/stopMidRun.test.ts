import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { assertBuilt, runNode } from '../../test/cli/runNode.js'

// A Ctrl-C or a supervisor's SIGTERM while the example runs: its handler
// closes BullMQ's connections under the run, which fails on its next Redis
// command. That failure reached the top level and ended the process at once
// (exit 1, ioredis's "Connection is closed." stack), before the handler had
// stopped Redis or exited as the signal would have.
it('bullmq-queue: a SIGTERM before its first job exits 143 with nothing printed, the run stopped under it reported by no stack', async (ctx) => {
  assertBuilt(fileURLToPath(new URL('../../packages/bullmq/dist/index.js', import.meta.url)))
  const { redisAvailable } = await import('@hourglass/testkit')
  if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
  const run = await runNode(
    [
      // Sends the SIGTERM as the example waits for its QueueEvents: its first job not added yet.
      '--import',
      fileURLToPath(new URL('./stopBeforeFirstJob.mjs', import.meta.url)),
      fileURLToPath(new URL('./index.mjs', import.meta.url)),
    ],
    { killAfterMs: 20_000 },
  )
  expect({ code: run.code, signal: run.signal, stderr: run.stderr, stdout: run.stdout }).toEqual({
    code: 143,
    signal: null,
    stderr: '',
    stdout: '',
  })
})
