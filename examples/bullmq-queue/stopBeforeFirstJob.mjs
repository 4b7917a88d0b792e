// Test support (stopMidRun.test.ts of bullmq-queue and one-trace), loaded
// with `node --import` before an example: sends this process a SIGTERM the
// moment the example first waits for its QueueEvents to be ready, and lets
// the wait go on once the example's signal handler has started closing
// BullMQ's connections. So a test stops an example mid-run at a known point,
// before its first job is added, with no timing guess.
import { QueueEvents } from 'bullmq'

const waitUntilReady = QueueEvents.prototype.waitUntilReady
let sent = false
QueueEvents.prototype.waitUntilReady = async function (...args) {
  if (!sent) {
    sent = true
    process.kill(process.pid, 'SIGTERM')
    // A signal reaches its listeners in the poll phase: over by setImmediate's turn.
    await new Promise((resolve) => setImmediate(resolve))
  }
  return waitUntilReady.apply(this, args)
}
