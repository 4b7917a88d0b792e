import { once } from 'node:events'
import { createServer } from 'node:http'
import { addWithDeadline, withDeadline } from '@hourglass/bullmq'
import { Deadline, wait } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { redisAvailable, startRedis } from '@hourglass/testkit'
import { Queue, Worker } from 'bullmq'
import { fmt, ratioText, row, verdict } from '../lib/report.js'
import { interleave, max, median, percentile } from '../lib/stats.js'

const PEER = 'plain BullMQ 6 (`queue.add`, a bare processor)'
const FLOOR =
  'floor: plain BullMQ, the processor aborts its call with its own `setTimeout` at the producer’s deadline (same process, same clock)'

/**
 * Issue 18: deadlines that ride with BullMQ jobs, against plain BullMQ (which
 * has no deadline: a job runs whenever a worker gets to it, and its calls run
 * to their end) and, for the abort time, against the floor — a processor that
 * knows the deadline on the producer's own clock and aborts with a bare timer.
 * Three experiments on one throwaway redis-server:
 * - expired: jobs with deadlines wait in a queue whose worker is paused past them;
 * - running: jobs call an upstream that answers too late, all hitting their deadline at once;
 * - throughput: no-op jobs, to price the wrapper (one Redis TIME per burst of starts).
 */
export async function run({ quick, log }) {
  const title = 'Deadlines in a job queue (BullMQ)'
  if (!redisAvailable()) {
    return {
      id: '18b',
      title,
      setup: '**Skipped**: `redis-server` is not on PATH (`.ci/run` installs it).',
      rows: [],
    }
  }
  const redis = await startRedis()
  const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }
  let queues = 0
  const open = []
  const newQueue = () => {
    const name = `bench-${++queues}`
    const queue = new Queue(name, { connection })
    open.push(queue)
    return { name, queue }
  }
  const newWorker = (name, processor, opts) => {
    const worker = new Worker(name, processor, { connection, ...opts })
    worker.on('error', () => {})
    open.push(worker)
    return worker
  }
  const closeAll = async () => {
    for (const closable of open.splice(0).reverse()) await closable.close(true)
  }

  const E = {
    jobs: quick ? 100 : 1_000,
    deadlineMs: quick ? 300 : 2_000,
    pauseMs: quick ? 500 : 3_000,
  }
  const R = {
    jobs: quick ? 10 : 50,
    deadlineMs: quick ? 500 : 2_000,
    answerAfterMs: quick ? 1_000 : 4_000,
  }
  const T = { jobs: quick ? 200 : 3_000, concurrency: 50 }
  const rounds = quick ? 1 : 2

  // An upstream that answers, but only after everybody's deadline.
  const upstream = createServer((req, res) => {
    const timer = setTimeout(() => res.end('late answer'), R.answerAfterMs)
    req.socket.once('close', () => clearTimeout(timer))
  })
  upstream.listen(0, '127.0.0.1')
  await once(upstream, 'listening')
  const upstreamUrl = `http://127.0.0.1:${upstream.address().port}/generate`

  const expired = async (variant) => {
    const { name, queue } = newQueue()
    let ran = 0
    const body = async () => {
      ran++
    }
    const processor = variant === 'hourglass' ? withDeadline(body) : body
    const worker = newWorker(name, processor, { concurrency: 50 })
    await worker.waitUntilReady()
    await worker.pause()
    await Promise.all(
      Array.from({ length: E.jobs }, (_, i) =>
        variant === 'hourglass'
          ? addWithDeadline(queue, 'job', { i }, { deadline: Deadline.after(E.deadlineMs) })
          : queue.add('job', { i }),
      ),
    )
    await wait(E.pauseMs) // the scenario: the worker is away past every deadline
    const drained = settle(worker, E.jobs)
    const resumed = performance.now()
    worker.resume()
    await drained
    const drainMs = performance.now() - resumed
    const counted = variant === 'hourglass' ? processor.counts.expired : 0
    await closeAll()
    return { ran, counted, drainMs }
  }

  const running = async (variant) => {
    const { name, queue } = newQueue()
    const fetch = createFetch()
    const endedAt = new Map()
    const call = async (job, signal) => {
      try {
        await (await fetch(`${upstreamUrl}?job=${job.id}`, signal ? { signal } : {})).text()
      } finally {
        endedAt.set(job.id, performance.now())
      }
    }
    const processor = {
      hourglass: withDeadline(async (job) => call(job)),
      bullmq: async (job) => call(job),
      floor: async (job) => {
        const controller = new AbortController()
        const timer = setTimeout(
          () => controller.abort(),
          Math.max(0, job.data.deadlineAt - performance.now()),
        )
        try {
          await call(job, controller.signal)
        } finally {
          clearTimeout(timer)
        }
      },
    }[variant]
    const worker = newWorker(name, processor, { concurrency: R.jobs })
    await worker.waitUntilReady()
    // Warm the abort path once (first errors of a process are slower).
    const warm = settle(worker, 1)
    const warmDeadline = Deadline.after(100)
    if (variant === 'hourglass') {
      await addWithDeadline(queue, 'warm', {}, { deadline: warmDeadline })
    } else {
      await queue.add('warm', { deadlineAt: warmDeadline.expiresAt })
    }
    await warm
    endedAt.clear()

    const deadlines = new Map()
    const drained = settle(worker, R.jobs)
    await Promise.all(
      Array.from({ length: R.jobs }, async () => {
        const deadline = Deadline.after(R.deadlineMs)
        const job =
          variant === 'hourglass'
            ? await addWithDeadline(queue, 'call', {}, { deadline })
            : await queue.add('call', { deadlineAt: deadline.expiresAt })
        deadlines.set(job.id, deadline.expiresAt)
      }),
    )
    await drained
    await fetch.close()
    await closeAll()
    const late = [...deadlines].map(([id, at]) => endedAt.get(id) - at)
    return { p50: median(late), p99: percentile(late, 0.99), max: max(late) }
  }

  const throughput = async (variant) => {
    const { name, queue } = newQueue()
    const body = async () => {}
    const processor = variant === 'hourglass' ? withDeadline(body) : body
    const worker = newWorker(name, processor, { concurrency: T.concurrency })
    await worker.waitUntilReady()
    await worker.pause()
    const deadline = Deadline.after(600_000)
    await Promise.all(
      Array.from({ length: T.jobs }, (_, i) =>
        variant === 'hourglass'
          ? addWithDeadline(queue, 'job', { i }, { deadline })
          : queue.add('job', { i }),
      ),
    )
    deadline.dispose()
    const drained = settle(worker, T.jobs)
    const started = performance.now()
    worker.resume()
    await drained
    const perSecond = T.jobs / ((performance.now() - started) / 1000)
    await closeAll()
    return { perSecond }
  }

  try {
    const exp = await interleave(['hourglass', 'bullmq'], rounds, async (variant, round) => {
      const r = await expired(variant)
      log(
        `queue expired round ${round + 1} ${variant}: ran ${r.ran}/${E.jobs}, counted ${r.counted}, drained in ${fmt(r.drainMs)} ms`,
      )
      return r
    })
    const run_ = await interleave(
      ['hourglass', 'bullmq', 'floor'],
      rounds,
      async (variant, round) => {
        const r = await running(variant)
        log(
          `queue running round ${round + 1} ${variant}: call ended after the deadline p50 ${fmt(r.p50, 1)} / p99 ${fmt(r.p99, 1)} / max ${fmt(r.max, 1)} ms`,
        )
        return r
      },
    )
    const thr = await interleave(['hourglass', 'bullmq'], rounds, async (variant, round) => {
      const r = await throughput(variant)
      log(`queue throughput round ${round + 1} ${variant}: ${fmt(r.perSecond)} jobs/s`)
      return r
    })

    // Counts: the worst round (a single expired job run is a failure). Times: the median over rounds.
    const worst = (results, field) => Math.max(...results.map((r) => r[field]))
    const least = (results, field) => Math.min(...results.map((r) => r[field]))
    const med = (results, field) => median(results.map((r) => r[field]))
    const rows = [
      row({
        measure: `expired jobs that ran (of ${fmt(E.jobs)}; worst round)`,
        peerName: PEER,
        peer: fmt(worst(exp.bullmq, 'ran')),
        ours: fmt(worst(exp.hourglass, 'ran')),
        ratio: '—',
        target: 'ours = 0',
        verdict: verdict(worst(exp.hourglass, 'ran') === 0),
      }),
      row({
        measure: `expired jobs counted as expired (of ${fmt(E.jobs)}; worst round)`,
        peerName: PEER,
        peer: 'no such count',
        ours: fmt(least(exp.hourglass, 'counted')),
        ratio: '—',
        target: `ours = ${fmt(E.jobs)}`,
        verdict: verdict(least(exp.hourglass, 'counted') === E.jobs),
      }),
      row({
        measure: 'backlog cleared after the resume (ms)',
        peerName: `${PEER}, running every expired job`,
        peer: fmt(med(exp.bullmq, 'drainMs')),
        ours: fmt(med(exp.hourglass, 'drainMs')),
        ratio: ratioText(med(exp.hourglass, 'drainMs'), med(exp.bullmq, 'drainMs')),
      }),
    ]
    for (const [field, label] of [
      ['p50', 'p50'],
      ['p99', 'p99'],
      ['max', 'max'],
    ]) {
      for (const peer of ['bullmq', 'floor']) {
        const ours = med(run_.hourglass, field)
        const targeted = field === 'max' && peer === 'bullmq'
        rows.push(
          row({
            measure: `running jobs: outbound call ended after the deadline, ${label} (ms)`,
            peerName:
              peer === 'bullmq' ? `${PEER}: the call runs until the upstream answers` : FLOOR,
            peer: fmt(med(run_[peer], field), 1),
            ours: fmt(ours, 1),
            ratio: ratioText(ours, med(run_[peer], field)),
            target: targeted ? 'ours ≤ 20 ms' : 'none set',
            verdict: targeted ? verdict(ours <= 20) : 'info',
          }),
        )
      }
    }
    rows.push(
      row({
        measure: `throughput, no-op jobs with deadlines (jobs/s, concurrency ${T.concurrency})`,
        peerName: `${PEER}, no deadlines`,
        peer: fmt(med(thr.bullmq, 'perSecond')),
        ours: fmt(med(thr.hourglass, 'perSecond')),
        ratio: ratioText(med(thr.hourglass, 'perSecond'), med(thr.bullmq, 'perSecond')),
      }),
    )
    return {
      id: '18b',
      title,
      setup:
        `One redis-server (Debian's, loopback), BullMQ 6, everything else in this process. ` +
        `**Expired**: ${fmt(E.jobs)} jobs with ${fmt(E.deadlineMs)} ms deadlines are added while the worker ` +
        `(concurrency 50) is paused; it resumes after ${fmt(E.pauseMs)} ms. Ours: \`addWithDeadline\` + ` +
        `\`withDeadline\`; peer: \`queue.add\` and the same processor, bare. **Running**: ${R.jobs} jobs with ` +
        `${fmt(R.deadlineMs)} ms deadlines, added together and all running at once (concurrency ${R.jobs}), each ` +
        `calling (\`createFetch\`) an upstream that answers after ${fmt(R.answerAfterMs)} ms; the figure is when ` +
        'each call ended (rejected or answered) minus the deadline the producer set, on the same clock; one ' +
        `warm-up job first. **Throughput**: ${fmt(T.jobs)} no-op jobs drained by a resumed worker. ` +
        `${rounds} interleaved round${rounds === 1 ? '' : 's'}; medians over rounds unless the row says otherwise.`,
      rows,
      notes: [
        'Read the abort rows against the floor: a bare timer, on the producer’s own clock, aborting the same ' +
          'calls at the same instants. What both pay is the burst: every running job reaches its deadline ' +
          'within a few ms, each deadline has its own timer, and each abort (undici tearing down a request) ' +
          'runs before the next timer fires, so the last of N calls ends N aborts late. Jobs ended by their ' +
          'deadline go back to BullMQ on the next turn of the event loop, so its bookkeeping (Redis writes, ' +
          'stack traces) does not delay the aborts still due. A call ended by our deadline closes its socket ' +
          'in the turn it rejects: packages/bullmq/test/runningJobs.timing.test.ts measures both ends, ' +
          'the upstream in its own process.',
        'The worker’s copy of a deadline is conservative by the round trip of its Redis `TIME` read, so a ' +
          'call can end a little before the producer’s deadline, never after it because of clocks.',
        'Throughput: a job with a deadline costs one Redis `TIME` read when it starts (starts in the same ' +
          'round trip share one read), a `Deadline` and its timer, and the AsyncLocalStorage context.',
      ],
    }
  } finally {
    await closeAll()
    upstream.closeAllConnections()
    upstream.close()
    await redis.stop()
  }
}

/** Resolves once `count` more jobs have completed or failed on `worker`. */
function settle(worker, count) {
  let seen = 0
  return new Promise((resolve) => {
    const onEnd = () => {
      if (++seen < count) return
      worker.off('completed', onEnd)
      worker.off('failed', onEnd)
      resolve()
    }
    worker.on('completed', onEnd)
    worker.on('failed', onEnd)
  })
}
