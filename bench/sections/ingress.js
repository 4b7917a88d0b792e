import autocannon from 'autocannon'
import { startChild } from '../lib/child.js'
import { fmt, ratioText, row, verdict } from '../lib/report.js'
import { interleave, medianOf } from '../lib/stats.js'

const VARIANTS = ['bare', 'hourglass', 'connect-timeout', 'als', 'floor']

/** Item 1: `deadline()` against bare Express and connect-timeout, autocannon on loopback. */
export async function run({ quick, log }) {
  const rounds = quick ? 1 : 5
  const durationS = quick ? 0.5 : 4
  const connections = 32
  const servers = Object.fromEntries(
    await Promise.all(VARIANTS.map(async (v) => [v, await startChild('helloServer.js', [v])])),
  )
  try {
    const hit = (variant, seconds) =>
      autocannon({
        url: `http://127.0.0.1:${servers[variant].ready.port}/`,
        connections,
        duration: seconds,
      })
    // Warm each server's JIT before measuring.
    for (const v of VARIANTS) await hit(v, quick ? 0.25 : 1.5)
    const results = await interleave(VARIANTS, rounds, async (variant, round) => {
      const r = await hit(variant, durationS)
      log(
        `ingress round ${round + 1} ${variant}: ${fmt(r.requests.average)} req/s, p99 ${r.latency.p99} ms`,
      )
      if (r.errors > 0 || r.non2xx > 0)
        throw new Error(`${variant}: ${r.errors} errors, ${r.non2xx} non-2xx`)
      return { rps: r.requests.average, p99: r.latency.p99 }
    })
    const rps = (v) => medianOf(results[v], (r) => r.rps)
    const p99 = (v) => medianOf(results[v], (r) => r.p99)
    const ours = rps('hourglass')
    const bare = rps('bare')
    const ct = rps('connect-timeout')
    return {
      id: '1',
      title: 'Ingress overhead',
      setup:
        `Express 5 hello world (\`res.send('Hello World!')\`) in its own process; autocannon in the bench process, ` +
        `${connections} keep-alive connections, ${durationS} s per run, ${rounds} interleaved rounds after a warm-up. ` +
        "`deadline({ defaultMs: 5000 })` vs bare Express vs `connect-timeout('5s')`. Figures: median requests/s and " +
        'median p99 latency over rounds.',
      rows: [
        row({
          measure: 'throughput (req/s)',
          peerName: 'floor: bare + one `AsyncLocalStorage.run`, one timer, one `finish` listener',
          peer: fmt(rps('floor')),
          ours: fmt(ours),
          ratio: ratioText(ours, rps('floor')),
          target: '≥ 0.97×',
          verdict: verdict(ours / rps('floor') >= 0.97),
        }),
        row({
          measure: 'throughput (req/s)',
          peerName: 'bare Express',
          peer: fmt(bare),
          ours: fmt(ours),
          ratio: ratioText(ours, bare),
        }),
        row({
          measure: 'throughput (req/s)',
          peerName: 'connect-timeout',
          peer: fmt(ct),
          ours: fmt(ours),
          ratio: ratioText(ours, ct),
        }),
        row({
          measure: 'p99 latency (ms)',
          peerName: 'bare Express',
          peer: fmt(p99('bare')),
          ours: fmt(p99('hourglass')),
          ratio: ratioText(p99('hourglass'), p99('bare')),
        }),
        row({
          measure: 'p99 latency (ms)',
          peerName: 'connect-timeout',
          peer: fmt(p99('connect-timeout')),
          ours: fmt(p99('hourglass')),
          ratio: ratioText(p99('hourglass'), p99('connect-timeout')),
        }),
        row({
          measure: 'throughput (req/s), bare + `AsyncLocalStorage.run` only',
          peerName: 'bare Express',
          peer: fmt(bare),
          ours: fmt(rps('als')),
          ratio: ratioText(rps('als'), bare),
        }),
      ],
      notes: [
        'The floor row is the least any deadline middleware does per request on Node 20: carry a context through ' +
          '`await` (one `AsyncLocalStorage.run`), arm a timer, and release it when the response finishes. ' +
          '`deadline()` is measured against it; bare Express is shown for scale.',
        'The last row is not ours: it is bare Express with nothing but an `AsyncLocalStorage.run()` around the chain — ' +
          'the floor for any middleware that carries a per-request context through `await` on Node 20 (where ' +
          'AsyncLocalStorage is built on async_hooks and every promise created under a store pays for it). ' +
          '`deadline()` needs that context for `currentDeadline()`.',
        'Where the rest goes: a CPU profile of the `deadline()` server under this load (taken while writing this bench) ' +
          "puts Hourglass's own functions (`deadline.js`, `IngressRequest.js`, core) at about 3 % of samples; the gap is " +
          'per-request allocation and bookkeeping — a timer, the `Deadline`, the `IngressRequest`, two ' +
          '`once` listeners on `res` — with the garbage collector the largest item, plus AsyncLocalStorage. (A WeakMap ' +
          'entry per request, since replaced by a symbol property, cost the most: 0.79× → 0.88× in one run.) ' +
          '`connect-timeout`, which also arms a timer and two listeners per request, lands close to ours.',
        `Per round (req/s): ${VARIANTS.map((v) => `${v} ${results[v].map((r) => fmt(r.rps)).join(' / ')}`).join('; ')}.`,
      ],
    }
  } finally {
    await Promise.all(VARIANTS.map((v) => servers[v].stop()))
  }
}
