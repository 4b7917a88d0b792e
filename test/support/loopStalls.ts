import { readFileSync } from 'node:fs'

/**
 * How long this process's event loop was kept from running, from now until
 * `stop()`, in ms. Two measures, the larger taken: the time its thread was
 * ready to run but waited for a CPU (Linux's `/proc/thread-self/schedstat`,
 * the run-queue wait; 0 where that file is missing), and, over each gap
 * between the ticks of a 5 ms interval, the wall time beyond the interval
 * less the CPU time the process used in it, summed (this one also sees a
 * process stopped outright, as SIGSTOP does, which is in no run queue).
 *
 * A timing test's control. A plain timer armed for the same instant as the
 * answer measures how late timers fire at that instant; a loaded box that
 * takes the CPU from this process just after it (say between the two
 * loopback messages that carry a cancellation to the next hop) is invisible
 * to it, whether in one 300 ms stop or as a 25 % share of a core for the
 * whole way. Judge an answer by `bound + stalled` over the window it was
 * awaited in. Neither time spent waiting for I/O nor code of ours holding
 * the loop (a slow synchronous path) counts: only time the loop could not
 * run.
 */
export function watchLoopStalls(tickMs = 5): { stop(): number } {
  const from = runQueueWaitMs()
  const ticks = estimateFromTicks(tickMs)
  let stopped: number | undefined
  return {
    stop() {
      if (stopped === undefined) {
        const waited = from === undefined ? 0 : (runQueueWaitMs() ?? from) - from
        stopped = Math.max(0, waited, ticks.stop())
      }
      return stopped
    },
  }
}

/** The main thread's total run-queue wait in ms (the second field of schedstat, ns), or undefined. */
function runQueueWaitMs(): number | undefined {
  try {
    const waitNs = Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1])
    return Number.isFinite(waitNs) ? waitNs / 1e6 : undefined
  } catch {
    return undefined
  }
}

function estimateFromTicks(tickMs: number): { stop(): number } {
  const cpuMs = () => {
    const { user, system } = process.cpuUsage()
    return (user + system) / 1000
  }
  let last = performance.now()
  let lastCpu = cpuMs()
  let total = 0
  const gap = () => {
    const now = performance.now()
    const cpu = cpuMs()
    const stalled = Math.max(0, now - last - tickMs - (cpu - lastCpu))
    last = now
    lastCpu = cpu
    return stalled
  }
  const ticks = setInterval(() => {
    total += gap()
  }, tickMs)
  // A test that throws before stop() must not keep its worker alive.
  ticks.unref()
  let stopped: number | undefined
  return {
    stop() {
      if (stopped === undefined) {
        clearInterval(ticks)
        stopped = total + gap()
      }
      return stopped
    },
  }
}
