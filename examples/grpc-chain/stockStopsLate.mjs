// Test support (stockStopsLate.test.ts), loaded with `node --import` before
// the example: the slow stock lookup's deadline ends, as on a busy machine
// whose timers run late, only after the edge has answered (the edge's own
// deadline, a reserve later, fired first). Its handler is told the deadline
// is done in the turn after the client has read the edge's answer: nothing
// in the example waits on wall time.
import { Deadline } from '@hourglass/core'

let edgeAnswered
const answered = new Promise((resolve) => {
  edgeAnswered = resolve
})
const send = globalThis.fetch
globalThis.fetch = async function (url, init) {
  const res = await send.call(this, url, init)
  if (!String(url).endsWith('/order/slow')) return res
  const text = res.text
  res.text = async function () {
    const body = await text.call(this)
    setImmediate(edgeAnswered)
    return body
  }
  return res
}
// Only the example's own handler (its stack names the example) is told
// late: the packages' listeners, which answer the 504s, are not delayed.
const onDone = Deadline.prototype.onDone
Deadline.prototype.onDone = function (listener) {
  if (!new Error().stack.includes('/examples/grpc-chain/index.mjs')) {
    return onDone.call(this, listener)
  }
  return onDone.call(this, (reason) => void answered.then(() => listener(reason)))
}
