import { Agent, request } from 'undici'
import { startChild } from '../lib/child.js'
import { fmt, ratioText, row, verdict } from '../lib/report.js'
import { interleave, median, percentile } from '../lib/stats.js'

const VARIANTS = ['direct', 'proxy', 'gateway']

/**
 * Item 9 (and issue 17's overhead row): latency the gateway adds per request
 * in front of a fake provider, against a bare undici pass-through proxy (the
 * floor any gateway must do: read, forward, pipe back), and throughput at 16
 * requests at a time.
 */
export async function run({ quick, log }) {
  const perRun = quick ? 60 : 600
  const rounds = quick ? 1 : 5
  const child = await startChild('gatewayAndProvider.js')
  const agent = new Agent({ connections: 32 })
  const call = async (variant, stream) => {
    const t = performance.now()
    const res = await request(`${child.ready[variant]}/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Say hello.' }],
        max_tokens: 64,
        stream,
      }),
    })
    await res.body.text()
    if (res.statusCode !== 200) throw new Error(`${variant}: HTTP ${res.statusCode}`)
    return performance.now() - t
  }
  try {
    const figures = {}
    for (const stream of [false, true]) {
      for (const v of VARIANTS) for (let i = 0; i < perRun / 2; i++) await call(v, stream) // warm-up
      const results = await interleave(VARIANTS, rounds, async (variant) => {
        const latencies = []
        for (let i = 0; i < perRun; i++) latencies.push(await call(variant, stream))
        return { p50: median(latencies), p99: percentile(latencies, 0.99) }
      })
      figures[stream ? 'stream' : 'json'] = results
      log(
        `gateway ${stream ? 'stream' : 'json'}: ${VARIANTS.map((v) => `${v} p50 ${fmt(median(results[v].map((r) => r.p50)), 2)} ms`).join(', ')}`,
      )
    }
    // Throughput: 16 at a time, non-streamed, interleaved rounds.
    const concurrency = 16
    const perBurst = quick ? 160 : 1600
    const burst = async (variant) => {
      let next = 0
      const t = performance.now()
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < perBurst) {
            next++
            await call(variant, false)
          }
        }),
      )
      return perBurst / ((performance.now() - t) / 1000)
    }
    for (const v of ['proxy', 'gateway']) await burst(v) // warm-up
    const throughput = await interleave(['proxy', 'gateway'], rounds, (variant) => burst(variant))
    const rps = (v) => median(throughput[v])
    log(
      `gateway throughput: proxy ${fmt(rps('proxy'))} req/s, gateway ${fmt(rps('gateway'))} req/s`,
    )

    const rows = []
    const addedP50 =
      median(figures.json.gateway.map((r) => r.p50)) - median(figures.json.proxy.map((r) => r.p50))
    rows.push(
      row({
        measure: `non-streamed completion, added p50 latency over the proxy (ms)`,
        peerName: 'a bare undici pass-through proxy',
        peer: '0',
        ours: fmt(addedP50, 2),
        ratio: '—',
        target: '≤ 1 ms',
        verdict: verdict(addedP50 <= 1),
      }),
      row({
        measure: `throughput (req/s), ${concurrency} at a time, non-streamed`,
        peerName: 'a bare undici pass-through proxy',
        peer: fmt(rps('proxy')),
        ours: fmt(rps('gateway')),
        ratio: ratioText(rps('gateway'), rps('proxy')),
        target: '≥ 0.8×',
        verdict: verdict(rps('gateway') / rps('proxy') >= 0.8),
      }),
    )
    for (const kind of ['json', 'stream']) {
      for (const field of ['p50', 'p99']) {
        const proxied = median(figures[kind].proxy.map((r) => r[field]))
        const gateway = median(figures[kind].gateway.map((r) => r[field]))
        rows.push(
          row({
            measure: `${kind === 'json' ? 'non-streamed' : 'streamed'} completion, ${field} latency (ms); the gateway adds ${fmt(gateway - proxied, 2)} ms over the proxy`,
            peerName: 'a bare undici pass-through proxy',
            peer: fmt(proxied, 2),
            ours: fmt(gateway, 2),
            ratio: ratioText(gateway, proxied),
          }),
        )
      }
    }
    for (const kind of ['json', 'stream']) {
      for (const field of ['p50', 'p99']) {
        const direct = median(figures[kind].direct.map((r) => r[field]))
        const gateway = median(figures[kind].gateway.map((r) => r[field]))
        rows.push(
          row({
            measure: `${kind === 'json' ? 'non-streamed' : 'streamed'} completion, ${field} latency (ms); the gateway adds ${fmt(gateway - direct, 2)} ms`,
            peerName: 'the provider called directly',
            peer: fmt(direct, 2),
            ours: fmt(gateway, 2),
            ratio: ratioText(gateway, direct),
          }),
        )
      }
    }
    return {
      id: '9',
      title: 'Gateway overhead',
      setup:
        'A fake OpenAI provider (testkit, answers at once), `startGateway` in front of it (one model, one provider, ' +
        'default policy, logger discarded) and a bare undici pass-through proxy (the floor: read the body, forward it, ' +
        'pipe the answer back) share one process; the bench process sends chat completions over keep-alive ' +
        `connections to each. Latency: one at a time, ${perRun} requests per run, ${rounds} interleaved rounds after a ` +
        "warm-up, medians of each run's p50 / p99. Throughput: 16 at a time, interleaved rounds. The gateway's extra " +
        'work: parse and validate, deadline, policy, translation, re-encoding, SSE re-cutting, logs, metrics.',
      rows,
      notes: [],
    }
  } finally {
    await agent.close()
    await child.stop()
  }
}
