// Heap per 10,000 live deadlines, measured in a process of its own started
// with --expose-gc: ours vs a hand-rolled AbortController + setTimeout.
import { Deadline } from '@hourglass/core'
import { announceReady } from '../lib/child.js'

const COUNT = 10_000
const rounds = Number(process.argv[2] ?? 5)

function settle() {
  for (let i = 0; i < 4; i++) globalThis.gc()
  return process.memoryUsage().heapUsed
}

const variants = {
  hourglass() {
    const live = []
    for (let i = 0; i < COUNT; i++) live.push(Deadline.after(60_000))
    return [
      live,
      () => {
        for (const d of live) d.dispose()
      },
    ]
  },
  abortController() {
    const live = []
    for (let i = 0; i < COUNT; i++) {
      const controller = new AbortController()
      const timer = setTimeout(() => controller.abort(), 60_000)
      timer.unref()
      live.push({ controller, timer })
    }
    return [
      live,
      () => {
        for (const d of live) clearTimeout(d.timer)
      },
    ]
  },
}

const results = { hourglass: [], abortController: [] }
for (let round = 0; round < rounds; round++) {
  const order =
    round % 2 === 0 ? ['hourglass', 'abortController'] : ['abortController', 'hourglass']
  for (const name of order) {
    const before = settle()
    let [live, release] = variants[name]()
    const during = settle()
    results[name].push((during - before) / COUNT)
    release()
    live.length = 0
    live = undefined
    release = undefined
    settle()
  }
}
announceReady(results)
