// A job queue whose jobs carry their deadline: one job waits past it and never
// runs; another is running when its deadline comes, and its call to a slow
// upstream is aborted then. Starts its own redis-server (testkit), no setup.
// Run: npm run build && node examples/bullmq-queue/index.mjs
import { createServer } from 'node:http'
import { addWithDeadline, withDeadline } from '@hourglass/bullmq'
import { Deadline, wait } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { startRedis } from '@hourglass/testkit'
import { Queue, QueueEvents, Worker } from 'bullmq'

// A reader that leaves early (`| head`, `less` quit) ends the output, not the
// run: unhandled, its EPIPE was a stack trace and exit 1 in the middle of it.
process.stdout.on('error', (error) => {
  if (error.code !== 'EPIPE') throw error
})

const redis = await startRedis().catch((error) => {
  if (error?.code !== 'ENOENT') throw error
  console.error(
    'examples/bullmq-queue needs redis-server on PATH (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)',
  )
  process.exit(1)
})
// redis-server is a child of this process: nothing stops it when this
// process ends, so a Ctrl-C, a kill or a failure below would leave it running,
// orphaned, holding its port. Stopped on a stop signal (then exit as the signal
// would have), and at any exit (stop() sends its SIGTERM at once). On a signal
// BullMQ's connections are closed first: cut by the server's exit instead, each
// would print an ECONNRESET stack on the way out.
const bullmq = []
let stopping = false
process.once('exit', () => void redis.stop())
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
]) {
  process.once(signal, () => {
    stopping = true
    // BullMQ's job.waitUntilFinished() checks the job from an async Promise
    // executor: a connection closed under that check rejects where no caller
    // can catch it, and Node ended the process at once (exit code 1, an
    // ioredis "Connection is closed" stack, Redis left running). Once
    // stopping, such a rejection is the stop, as the run's own failure is below.
    process.on('unhandledRejection', () => {})
    void Promise.allSettled(bullmq.map((c) => c.close(true)))
      .then(() => redis.stop())
      .finally(() => process.exit(code))
  })
}
// The run below goes on while the handler closes its connections: stopped
// mid-run, it fails on its next Redis command. That failure is the stop, not
// an error of the run (the handler exits with the signal's code once Redis is
// down); left to reach the top level, it would end the process at once, exit
// code 1 and an ioredis stack, before Redis was stopped.
try {
  const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }

  // BullMQ's clients, all made before the run's first await (a signal is
  // handled at an await): the handler finds each in `bullmq` to close. One
  // made after it ran would be left open, cut by Redis's exit: an ECONNRESET.
  const fetch = createFetch()
  const queue = new Queue('reports', { connection })
  const events = new QueueEvents('reports', { connection })

  let runs = 0
  const callEnded = new Map()
  const processor = withDeadline(async (job) => {
    runs++
    try {
      // createFetch reads the job's deadline from currentDeadline(): it sends
      // x-deadline-remaining-ms and aborts the call when the deadline comes.
      const res = await fetch(upstreamUrl, { method: 'POST', body: JSON.stringify(job.data) })
      // An error answer (a 503, a 504) fails the job, for BullMQ to retry as its
      // attempts allow: returned, it would be stored as the job's result.
      if (!res.ok) {
        await res.body?.cancel()
        throw new Error(`upstream answered ${res.status}`)
      }
      return await res.json()
    } finally {
      callEnded.set(job.id, performance.now())
    }
  })
  // Not started yet: the worker is away (a deploy, a backlog) while job 1 waits.
  const worker = new Worker('reports', processor, { connection, autorun: false })
  bullmq.push(queue, events, worker)

  // The figures printed are the values used: change one, the line follows.
  const expiredBudgetMs = 300
  const workerAwayMs = 600
  const runningBudgetMs = 500
  const upstreamMs = 5000

  // An upstream (a model, say) that takes 5 s to answer.
  const upstream = createServer((req, res) => {
    const timer = setTimeout(() => res.end('{"text":"finally"}'), upstreamMs)
    req.socket.once('close', () => clearTimeout(timer))
  })
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  const upstreamUrl = `http://127.0.0.1:${upstream.address().port}/generate`

  await events.waitUntilReady()

  // How the job ended: why it failed, or what it returned. A job with time
  // enough for its call (a budget above the upstream's time) completes: it
  // has no failedReason, and was printed as "— undefined".
  const outcome = async (job) => {
    try {
      return `completed: ${JSON.stringify(await job.waitUntilFinished(events))}`
    } catch {
      return (await queue.getJob(job.id)).failedReason
    }
  }

  // 1. A job whose deadline passes while it waits in the queue.
  const expired = await addWithDeadline(
    queue,
    'weekly-report',
    { user: 1 },
    { deadline: Deadline.after(expiredBudgetMs), attempts: 3 },
  )
  await wait(workerAwayMs)
  worker.run()
  console.log(
    `expired job ${expired.id} (${expiredBudgetMs} ms budget, worker away ${workerAwayMs} ms): ran ${runs} time(s) — ${await outcome(expired)}`,
  )

  // 2. A job that is running when its deadline comes.
  const deadline = Deadline.after(runningBudgetMs)
  const running = await addWithDeadline(queue, 'weekly-report', { user: 2 }, { deadline })
  const reason = await outcome(running)
  const lateMs = callEnded.get(running.id) - deadline.expiresAt
  // Stopped by its deadline, the call ends at it or just after. One that
  // failed on its own (an error answer, a reset) ended before it: said so,
  // not as "aborted 0 ms after the deadline".
  const call =
    processor.counts.stopped > 0
      ? `call aborted ${Math.max(0, lateMs).toFixed(0)} ms after the deadline`
      : `call ended ${Math.max(0, -lateMs).toFixed(0)} ms before the deadline`
  console.log(
    `running job ${running.id} (${runningBudgetMs} ms budget, upstream takes ${upstreamMs} ms): ${call} — ${reason}`,
  )

  const { expired: e, stopped, retriesDropped } = processor.counts
  console.log(`worker counts: expired ${e}, stopped ${stopped}, retries dropped ${retriesDropped}`)

  await worker.close()
  await events.close()
  await queue.close()
  await fetch.close()
  upstream.closeAllConnections()
  upstream.close()
  await redis.stop()
} catch (error) {
  if (!stopping) throw error
}
