import { AsyncLocalStorage } from 'node:async_hooks'
import { currentDeadline, Deadline, readDeadline, runWithDeadline } from '@hourglass/core'
import { Bench } from 'tinybench'
import { startChild } from '../lib/child.js'
import { fmt, ratioText, row } from '../lib/report.js'
import { median } from '../lib/stats.js'

const BATCH = 100
const headers = { 'x-deadline-remaining-ms': '1500', 'content-type': 'application/json' }
const als = new AsyncLocalStorage()

// Each pair: ours, and the hand-rolled code a service would write instead.
const pairs = [
  {
    measure: 'ns per `Deadline.after` + `child` + `dispose` (both)',
    peerName:
      'hand-rolled: 2 × (`AbortController` + `setTimeout`), child linked by an abort listener, then cleared',
    ours: () => {
      const parent = Deadline.after(1000)
      const child = parent.child(500)
      child.dispose()
      parent.dispose()
    },
    peer: () => {
      const parent = new AbortController()
      const pt = setTimeout(() => parent.abort(), 1000)
      const child = new AbortController()
      const ct = setTimeout(() => child.abort(), 500)
      const onAbort = () => child.abort(parent.signal.reason)
      parent.signal.addEventListener('abort', onAbort)
      parent.signal.removeEventListener('abort', onAbort)
      clearTimeout(ct)
      clearTimeout(pt)
    },
  },
  {
    measure: 'ns per header parse (`readDeadline`, 2 headers)',
    peerName: '`Number.parseInt` of `x-deadline-remaining-ms` + range check',
    ours: () => readDeadline(headers),
    peer: () => {
      const n = Number.parseInt(headers['x-deadline-remaining-ms'] ?? '', 10)
      return Number.isFinite(n) && n >= 0 ? n : undefined
    },
  },
]

const asyncPair = {
  measure: 'ns per AsyncLocalStorage hop (`runWithDeadline` → `await` → `currentDeadline()`)',
  peerName: 'bare `AsyncLocalStorage.run` → `await` → `getStore()`',
  ours: async (deadline) =>
    runWithDeadline(deadline, async () => {
      await null
      return currentDeadline()
    }),
  peer: async (deadline) =>
    als.run(deadline, async () => {
      await null
      return als.getStore()
    }),
}

/** Item 3: the per-operation cost of core, and heap per 10,000 live deadlines. */
export async function run({ quick, log }) {
  const rounds = quick ? 2 : 7
  const timeMs = quick ? 40 : 250
  const deadline = Deadline.after(600_000)
  const all = [...pairs, asyncPair]
  const perRound = all.map(() => ({ ours: [], peer: [] }))
  for (let round = 0; round < rounds; round++) {
    const bench = new Bench({ time: timeMs, warmupTime: quick ? 10 : 50 })
    all.forEach((pair, i) => {
      const sides = round % 2 === 0 ? ['ours', 'peer'] : ['peer', 'ours']
      for (const side of sides) {
        const fn = pair[side]
        const task =
          pair === asyncPair
            ? async () => {
                for (let k = 0; k < BATCH; k++) await fn(deadline)
              }
            : () => {
                for (let k = 0; k < BATCH; k++) fn()
              }
        bench.add(`${i}:${side}`, task)
      }
    })
    await bench.run()
    for (const task of bench.tasks) {
      const [i, side] = task.name.split(':')
      // p50 of the per-batch latency (ms) → ns per operation.
      perRound[Number(i)][side].push((task.result.latency.p50 * 1e6) / BATCH)
    }
    log(`core round ${round + 1} done`)
  }
  deadline.dispose()
  const rows = all.map((pair, i) => {
    const ours = median(perRound[i].ours)
    const peer = median(perRound[i].peer)
    return row({
      measure: pair.measure,
      peerName: pair.peerName,
      peer: fmt(peer),
      ours: fmt(ours),
      ratio: ratioText(ours, peer),
    })
  })

  const heap = await startChild('heap.js', [String(quick ? 2 : 6)], { execArgv: ['--expose-gc'] })
  await heap.stop()
  const oursBytes = median(heap.ready.hourglass)
  const peerBytes = median(heap.ready.abortController)
  rows.push(
    row({
      measure: 'heap per 10,000 live deadlines (KiB)',
      peerName: "10,000 × (`AbortController` + unref'd `setTimeout`)",
      peer: fmt((peerBytes * 10_000) / 1024),
      ours: fmt((oursBytes * 10_000) / 1024),
      ratio: ratioText(oursBytes, peerBytes),
    }),
  )
  return {
    id: '3',
    title: 'Core cost',
    setup:
      `tinybench, ${rounds} rounds of ${timeMs} ms per task with ours and the peer alternating first; each sample is a batch of ` +
      `${BATCH} operations, the figure is the median over rounds of the median batch time ÷ ${BATCH}. Heap: a separate ` +
      'process with `--expose-gc` holds 10,000 live deadlines (60 s each, never fired) and compares `heapUsed` after ' +
      'forced GCs, alternating with the peer; median over rounds. The issue sets no target for these.',
    rows,
    notes: [
      'A `Deadline` carries more than the peer — its own timer, a lazily created signal, a parent link, the slice ' +
        'arithmetic — so the ratios say what that costs, not that the peer does the same job.',
    ],
  }
}
