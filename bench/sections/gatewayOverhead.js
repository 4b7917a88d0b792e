import { Agent, request } from 'undici'
import { startChild } from '../lib/child.js'
import { fmt, ratioText, row } from '../lib/report.js'
import { interleave, median, percentile } from '../lib/stats.js'

const VARIANTS = ['direct', 'gateway']

/** Item 9: latency the gateway adds per request in front of a fake provider. */
export async function run({ quick, log }) {
  const perRun = quick ? 60 : 600
  const rounds = quick ? 1 : 5
  const child = await startChild('gatewayAndProvider.js')
  const agent = new Agent({ connections: 4 })
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
    const rows = []
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
        'A fake OpenAI provider (testkit, answers at once) and `startGateway` in front of it (one model, one provider, ' +
        'default policy, logger discarded) share one process; the bench process sends chat completions one at a time ' +
        `over keep-alive connections, either straight to the provider or through the gateway. ${perRun} requests per ` +
        `run, ${rounds} interleaved rounds after a warm-up, medians of each run's p50 / p99. The issue sets no target: ` +
        'the rows say what the gateway costs (parse, deadline, policy, translation, re-encoding, SSE re-cutting).',
      rows,
      notes: [],
    }
  } finally {
    await agent.close()
    await child.stop()
  }
}
