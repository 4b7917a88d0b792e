// Usage: node scripts/inspect-worker.mjs <pid> [port]
//
// Opens the inspector of a live Vitest worker (SIGUSR1, as `node inspect -p`
// does) and prints what it is doing: the file and test Vitest records as
// current, the RPC calls to Vitest's main process still waiting for an answer
// (rejected on the way, so a run stuck on one goes on and says so), whether
// process.nextTick is a mock, and the process's active resources. For a
// suite that stops making progress with every test passed: see
// test/README.md, "When a run hangs". Uses Vitest internals (its worker
// state global and its RPC's `$rejectPendingCalls`): a diagnostic, not an API.
import { WebSocket } from 'undici'

const pid = Number(process.argv[2])
const port = Number(process.argv[3] ?? 9229)
if (!Number.isInteger(pid) || pid <= 0) {
  process.stderr.write('usage: node scripts/inspect-worker.mjs <pid> [port]\n')
  process.exit(2)
}
process.kill(pid, 'SIGUSR1')
await new Promise((resolve) => setTimeout(resolve, 1000))
const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()
const ws = new WebSocket(targets[0].webSocketDebuggerUrl)
await new Promise((resolve) => ws.addEventListener('open', resolve))
let id = 0
const waiting = new Map()
ws.addEventListener('message', (event) => {
  const message = JSON.parse(event.data)
  waiting.get(message.id)?.(message)
})
const call = (method, params) =>
  new Promise((resolve) => {
    id += 1
    waiting.set(id, resolve)
    ws.send(JSON.stringify({ id, method, params }))
  })
const expression = `(() => {
  const worker = globalThis.__vitest_worker__
  const pending = []
  try {
    worker?.rpc?.$rejectPendingCalls(({ method, reject }) => {
      pending.push(method)
      reject(new Error('inspect-worker: rejected the pending call ' + method))
    })
  } catch (error) {
    pending.push('(could not list: ' + error.message + ')')
  }
  return JSON.stringify({
    pid: process.pid,
    file: worker?.filepath,
    current: worker?.current?.name,
    currentState: worker?.current?.result?.state,
    pendingRpc: pending,
    nextTickIsMock: typeof process.nextTick.mock === 'object',
    resources: process.getActiveResourcesInfo(),
  })
})()`
const answer = await call('Runtime.evaluate', { expression, returnByValue: true })
process.stdout.write(`${answer.result?.result?.value ?? JSON.stringify(answer)}\n`)
// Closed from inside, a moment later, so the next process's inspector can take the port.
ws.send(
  JSON.stringify({
    id: id + 1,
    method: 'Runtime.evaluate',
    params: {
      expression: "setTimeout(() => process.getBuiltinModule('node:inspector').close(), 100)",
    },
  }),
)
await new Promise((resolve) => setTimeout(resolve, 300))
ws.close()
process.exit(0)
