import { Deadline } from '@hourglass/core'
import { createConnector, createFetch, deadlineInterceptor } from '@hourglass/fetch'
import { Agent, request, fetch as undiciFetch } from 'undici'
import { startChild } from '../lib/child.js'
import { fmt, ratioText, row, verdict } from '../lib/report.js'
import { interleave, median, medianOf, percentile } from '../lib/stats.js'

const VARIANTS = [
  'undici.request',
  'naive',
  'global fetch',
  'undici.fetch',
  'createFetch',
  'interceptor',
]

/** Item 2: createFetch vs raw undici.request vs Node's global fetch on a keep-alive loopback server. */
export async function run({ quick, log }) {
  const rounds = quick ? 1 : 7
  const perRound = quick ? 400 : 6000
  const concurrency = 16
  const upstream = await startChild('okServer.js')
  const url = `http://127.0.0.1:${upstream.ready.port}/items/42`
  // Each client gets its own pool of keep-alive connections of the same size.
  const agents = [new Agent({ connections: concurrency }), new Agent({ connections: concurrency })]
  const hourglass = createFetch({ dispatcher: new Agent({ connections: concurrency }) })
  const intercepted = new Agent({ connections: concurrency, connect: createConnector() }).compose(
    deadlineInterceptor(),
  )
  const calls = {
    'undici.request': async () => {
      const res = await request(url, { dispatcher: agents[0] })
      await res.body.text()
    },
    // What a careful hand-written client does: an AbortController and a timer per call.
    naive: async () => {
      const controller = new AbortController()
      const timer = setTimeout(() => controller.abort(), 5000)
      try {
        const res = await request(url, { dispatcher: agents[0], signal: controller.signal })
        await res.body.text()
      } finally {
        clearTimeout(timer)
      }
    },
    'global fetch': async () => {
      const res = await fetch(url)
      await res.text()
    },
    'undici.fetch': async () => {
      const res = await undiciFetch(url, { dispatcher: agents[1] })
      await res.text()
    },
    // What a service does per outbound call: a deadline, the call, the body, dispose.
    createFetch: async () => {
      const deadline = Deadline.after(5000)
      try {
        const res = await hourglass(url, { deadline })
        await res.text()
      } finally {
        deadline.dispose()
      }
    },
    // The same, for code that stays on undici.request: our interceptor and connector.
    interceptor: async () => {
      const deadline = Deadline.after(5000)
      try {
        const res = await request(url, { dispatcher: intercepted, deadline })
        await res.body.text()
      } finally {
        deadline.dispose()
      }
    },
  }
  const burst = async (variant, count) => {
    const call = calls[variant]
    const latencies = []
    let next = 0
    const worker = async () => {
      while (next < count) {
        next++
        const t = performance.now()
        await call()
        latencies.push(performance.now() - t)
      }
    }
    const t0 = performance.now()
    await Promise.all(Array.from({ length: concurrency }, worker))
    const seconds = (performance.now() - t0) / 1000
    return { rps: count / seconds, p99: percentile(latencies, 0.99), p50: median(latencies) }
  }
  try {
    for (const v of VARIANTS) await burst(v, quick ? 200 : 2000) // warm-up
    const results = await interleave(VARIANTS, rounds, async (variant, round) => {
      const r = await burst(variant, perRound)
      log(`egress round ${round + 1} ${variant}: ${fmt(r.rps)} req/s, p99 ${fmt(r.p99, 2)} ms`)
      return r
    })
    const rps = (v) => medianOf(results[v], (r) => r.rps)
    const p99 = (v) => medianOf(results[v], (r) => r.p99)
    const ours = rps('createFetch')
    const raw = rps('undici.request')
    const engine = rps('undici.fetch')
    const viaInterceptor = rps('interceptor')
    const rows = [
      row({
        measure: 'throughput (req/s), `createFetch`',
        peerName: '`undici.fetch` (the engine it is built on)',
        peer: fmt(engine),
        ours: fmt(ours),
        ratio: ratioText(ours, engine),
        target: '≥ 0.95×',
        verdict: verdict(ours / engine >= 0.95),
      }),
      row({
        measure: 'throughput (req/s), `undici.request` + `deadlineInterceptor()`',
        peerName: 'raw `undici.request` (the floor)',
        peer: fmt(raw),
        ours: fmt(viaInterceptor),
        ratio: ratioText(viaInterceptor, raw),
        target: '≥ 0.90×',
        verdict: verdict(viaInterceptor / raw >= 0.9),
      }),
      row({
        measure: 'throughput (req/s), `undici.request` + `deadlineInterceptor()`',
        peerName: '`undici.request` + an AbortController and a timer per call',
        peer: fmt(rps('naive')),
        ours: fmt(viaInterceptor),
        ratio: ratioText(viaInterceptor, rps('naive')),
      }),
      row({
        measure: 'throughput (req/s), `createFetch`',
        peerName: 'raw `undici.request`',
        peer: fmt(raw),
        ours: fmt(ours),
        ratio: ratioText(ours, raw),
      }),
    ]
    for (const peer of ['global fetch']) {
      rows.push(
        row({
          measure: 'throughput (req/s), `createFetch`',
          peerName: `\`${peer}\``,
          peer: fmt(rps(peer)),
          ours: fmt(ours),
          ratio: ratioText(ours, rps(peer)),
        }),
      )
    }
    for (const peer of ['undici.request', 'undici.fetch']) {
      rows.push(
        row({
          measure: 'p99 latency (ms), `createFetch`',
          peerName: `\`${peer}\``,
          peer: fmt(p99(peer), 2),
          ours: fmt(p99('createFetch'), 2),
          ratio: ratioText(p99('createFetch'), p99(peer)),
        }),
      )
    }
    return {
      id: '2',
      title: 'Egress overhead',
      setup:
        `A keep-alive \`node:http\` server in its own process answers \`{"ok":true}\`; the bench process makes ` +
        `${fmt(perRound)} GETs per run, ${concurrency} at a time, each client on its own pool of ${concurrency} ` +
        `connections, ${rounds} interleaved rounds after a warm-up. Ours is a \`createFetch()\` call with a ` +
        '`Deadline.after(5000)` created, passed and disposed per call (what a service does); peers read the body the same way. ' +
        '`undici.fetch` (the same WHATWG fetch that `createFetch` is built on, npm undici 7) separates the cost of our ' +
        'layer from the cost of the fetch API itself. The last variant keeps `undici.request` and adds our ' +
        '`deadlineInterceptor()` and `createConnector()` (the same deadline per call).',
      rows,
      notes: [
        "Why `createFetch` misses: it is built on undici's WHATWG `fetch` (the `undici.fetch` row), which on its own runs " +
          "far below `undici.request`; against Node's global `fetch` it is close (the `global fetch` row). " +
          'On top of that, per call: `createFetch` adds an `AbortController` and an AsyncLocalStorage `run` ' +
          '(callStorage), and fetch keeps a second AsyncLocalStorage (attemptStorage) to hand the attempt to the ' +
          'connector; on Node 20 every AsyncLocalStorage instance adds work to every async resource in the process ' +
          '(`_propagate` in async_hooks, ~2 % of samples in a profile of the interceptor path). Attempts subscribe to the ' +
          'deadline with `Deadline.onDone`, which creates no `AbortSignal` (reading `deadline.signal` per call cost ' +
          '~3 % of samples before; the interceptor row went from 0.64× to 0.79× with that change in one run).',
        `Per round (req/s): ${VARIANTS.map((v) => `${v} ${results[v].map((r) => fmt(r.rps)).join(' / ')}`).join('; ')}.`,
      ],
    }
  } finally {
    await Promise.all([...agents.map((a) => a.close()), hourglass.close(), intercepted.close()])
    await upstream.stop()
  }
}
