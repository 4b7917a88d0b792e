import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { assertBuilt, cliBin, runNode } from './cli/runNode.js'

// Every example runs with one command against the built packages; these
// tests run them exactly so, and check what they print, so they cannot rot.
// The examples whose output carries a time (a 504 "after N ms", a call
// stopped N ms after its deadline) run here, in the timing project, where no
// other file shares the cores; the others are in examples.test.ts.
const example = (name: string) =>
  fileURLToPath(new URL(`../examples/${name}/index.mjs`, import.meta.url))

// An example spends most of its time waiting (on its deadlines, its servers,
// its Redis) after about a second of CPU loading its packages. The two whose
// timed windows leave the most room (a 504 by a 1 s deadline + 400 ms, an
// abort within 150 ms of a 500 ms deadline) run side by side, a core each.
// The three whose figures a second process's startup can upset (a 300 ms
// budget's 504 naming the slice that ran out, budgets that shrink by under
// 100 ms a hop, a 1 s budget across four hops) run one at a time.
describe.concurrent('examples/, two side by side', () => {
  it('three-hop: a comfortable budget is answered; a slow model gets a 504 by the deadline and the provider call is stopped', async () => {
    assertBuilt(cliBin)
    const run = await runNode([example('three-hop')], { killAfterMs: 20_000 })
    expect(run.code, run.stderr).toBe(0)
    const [fast, slow, provider] = run.stdout.trimEnd().split('\n')
    expect(fast).toMatch(/^budget 1000 ms → 200 after \d+ ms: \{"text":"Rayleigh scattering\."\}$/)
    const slowMatch = slow!.match(
      /^budget 1000 ms → 504 after (\d+) ms: \{"error":"deadline_exceeded","budgetMs":1000,.*"slice":"model"\}$/,
    )
    expect(slowMatch, slow).not.toBeNull()
    // The provider would take 1.5 s: the 504 comes by the 1 s deadline instead. The
    // slack is for a loaded box (a child process: no in-process control can see
    // its stalls); unenforced, this reads 1500 or more.
    expect(Number(slowMatch![1])).toBeLessThan(1000 + 400)
    expect(provider).toBe('provider: 2 calls, 1 paid; the slow one ended as "client-closed"')
  })

  it('bullmq-queue: a job that waited past its deadline never runs; a running job has its slow call aborted at its deadline', async (ctx) => {
    assertBuilt(fileURLToPath(new URL('../packages/bullmq/dist/index.js', import.meta.url)))
    const { redisAvailable } = await import('@hourglass/testkit')
    if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
    const run = await runNode([example('bullmq-queue')], { killAfterMs: 20_000 })
    expect(run.code, run.stderr).toBe(0)
    const [expired, running, counts] = run.stdout.trimEnd().split('\n')
    expect(expired).toMatch(
      /^expired job 1 \(300 ms budget, worker away 600 ms\): ran 0 time\(s\) — deadline_exceeded: job 1 of reports reached a worker \d+ ms after its deadline \(added with \d+ ms left\); not run$/,
    )
    const runningMatch = running!.match(
      /^running job 2 \(500 ms budget, upstream takes 5000 ms\): call aborted (\d+) ms after the deadline — deadline_exceeded: job 2 of reports was stopped by its deadline/,
    )
    expect(runningMatch, running).not.toBeNull()
    // At the deadline, not when the upstream answers 4.5 s later (slack for a loaded box).
    expect(Number(runningMatch![1])).toBeLessThan(150)
    expect(counts).toBe('worker counts: expired 1, stopped 1, retries dropped 0')
  })
})

describe('examples/', () => {
  it('otel-console: prints the two-hop trace as a waterfall, slices and the deadline events included', async () => {
    assertBuilt(cliBin)
    const run = await runNode([example('otel-console')], { killAfterMs: 20_000 })
    expect(run.code, run.stderr).toBe(0)
    // The outer hop answers its own 504: the budget its caller sent, the slice that ran out inside.
    expect(run.stdout).toMatch(
      /^GET \/quote with 300 ms → 504 \{"error":"deadline_exceeded","budgetMs":300,.*"slice":"lookup"\}/,
    )
    const lines = run.stdout.split('\n')
    // One trace across both services.
    expect(lines.find((l) => l.startsWith('trace '))).toMatch(/^trace [0-9a-f]{8} {2}\d+ spans/)
    for (const span of [
      'deadline.slice prepare',
      'deadline.slice upstream',
      'deadline.slice lookup',
      'deadline.egress GET',
    ]) {
      expect(
        lines.some((l) => l.includes(span)),
        span,
      ).toBe(true)
    }
    expect(run.stdout).toMatch(/! deadline\.exceeded .*stage=slice slice=lookup/)
    expect(run.stdout).toMatch(/! deadline\.exceeded .*stage=handler slice=lookup action=504/)
    // printWaterfall fits an 80-column terminal, and wraps what does not fit
    // rather than cutting it: the retry_skipped line was cut to `reason=~`.
    expect(run.stdout).toMatch(
      /! deadline\.retry_skipped [^\n]*why=upstream-deadline(?: |\n +)reason=HTTP_504$/m,
    )
    for (const line of lines.slice(lines.findIndex((l) => l.startsWith('trace ')))) {
      expect(line.length).toBeLessThanOrEqual(80)
    }
  })

  it('grpc-chain: the budget shrinks across HTTP → gRPC → HTTP; a slow lookup gets a 504 by the deadline, DEADLINE_EXCEEDED from the gRPC hop, and is stopped', async () => {
    assertBuilt(fileURLToPath(new URL('../packages/grpc/dist/index.js', import.meta.url)))
    const run = await runNode([example('grpc-chain')], { killAfterMs: 20_000 })
    expect(run.code, run.stderr).toBe(0)
    const [fast, fastBudgets, slow, slowBudgets, outcome] = run.stdout.trimEnd().split('\n')
    expect(fast).toMatch(/^budget 1000 ms → 200 after \d+ ms: \{"inStock":true\}$/)
    for (const [line, edgeMs] of [
      [fastBudgets, 990],
      [slowBudgets, 290],
    ] as const) {
      const m = line?.match(
        /^ {2}handlers' budgets: edge (\d+) ms \(HTTP\) → inventory (\d+) ms \(gRPC\) → stock (\d+) ms \(HTTP\)$/,
      )
      expect(m, line).not.toBeNull()
      const [edge, inventory, stock] = m!.slice(1).map(Number) as [number, number, number]
      // Each hop has less than the one before: its reserve kept to answer
      // (adaptive: 10 ms on an idle machine, up to 100 ms on a busy one), plus transit.
      expect(edge).toBeLessThanOrEqual(edgeMs)
      expect(edge).toBeGreaterThanOrEqual(edgeMs - 90)
      expect(inventory).toBeLessThanOrEqual(edge - 10)
      expect(stock).toBeLessThanOrEqual(inventory - 10)
    }
    const slowMatch = slow!.match(
      /^budget 300 ms → 504 after (\d+) ms: \{"error":"deadline_exceeded","budgetMs":300,/,
    )
    expect(slowMatch, slow).not.toBeNull()
    // By the 300 ms deadline (slack for a loaded box).
    expect(Number(slowMatch![1])).toBeLessThan(300 + 150)
    // Stopped by its own deadline, ~10 ms before inventory's; on a loaded box
    // inventory's cancel (its deadline, then the hop closed) can reach it first.
    expect(outcome).toMatch(
      /^ {2}inventory answered DEADLINE_EXCEEDED; the slow stock lookup stopped: (DeadlineExceededError|ClientClosedError) after \d+ ms$/,
    )
  })

  it('one-trace: one trace id across HTTP → gRPC → a BullMQ job → HTTP, each hop with less of the budget than the one before', async (ctx) => {
    assertBuilt(fileURLToPath(new URL('../packages/otel/dist/index.js', import.meta.url)))
    const { redisAvailable } = await import('@hourglass/testkit')
    if (!redisAvailable()) ctx.skip() // under CI this throws instead: the example must run there
    const run = await runNode([example('one-trace')], { killAfterMs: 20_000 })
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout.trimEnd().split('\n')
    expect(lines[0]).toBe('GET /quote/apples with 1000 ms → 200 {"item":"apples","price":42}')
    // What each hop was given, as its span recorded it.
    const budgets = lines[1]?.match(
      /^budgets: edge (\d+) ms \(HTTP\) → quotes (\d+) ms \(gRPC\) → job (\d+) ms \(queue\) → prices (\d+) ms \(HTTP\)$/,
    )
    expect(budgets, lines[1]).not.toBeNull()
    const [edge, quotes, job, prices] = budgets!.slice(1).map(Number) as number[]
    expect(edge).toBe(1000)
    expect(quotes).toBeLessThan(edge!)
    expect(job).toBeLessThan(quotes!)
    expect(prices).toBeLessThan(job!)

    // The waterfall: one trace id (several would be listed with commas), no failed span.
    const header = lines.findIndex((l) => l.startsWith('trace '))
    expect(lines[header]).toMatch(/^trace [0-9a-f]{8} {2}8 spans {2}[\d.]+ms$/)
    const drawing = lines.slice(header + 1, lines.indexOf('', header))
    for (const line of lines.slice(header)) expect(line.length).toBeLessThanOrEqual(80)
    expect(drawing.filter((l) => l.startsWith('!') || / !/.test(l.slice(0, 30)))).toEqual([])
    // Each hop's span (the ones that carry `left`: what its deadline had at start), by label.
    const spans = (name: string) =>
      drawing
        .filter((l) => l.slice(0, 30).trim() === name && /left \d+$/.test(l))
        .map((l) => ({ depth: l.search(/\S/), left: Number(l.match(/left (\d+)$/)![1]) }))
    const [edgeSpan] = spans('GET /quote/apples') // the edge's HTTP server span
    const [client, server] = spans('shop.Quotes/Quote') // gRPC client span, then server span
    const [jobSpan] = spans('process quotes') // the job's span
    const [attempt] = spans('deadline.egress GET') // the job's HTTP call
    const [pricesSpan] = spans('GET /price/apples') // the prices service's HTTP server span
    const hops = [edgeSpan, client, server, jobSpan, attempt, pricesSpan]
    expect(hops.every(Boolean), drawing.join('\n')).toBe(true)
    // Less left at each hop…
    for (let h = 1; h < hops.length; h++) expect(hops[h]!.left).toBeLessThan(hops[h - 1]!.left)
    // …and each a child of the one before: edge > gRPC client > gRPC server > job >
    // (the attempt | undici's client span > the prices server span).
    expect(client!.depth).toBeGreaterThan(edgeSpan!.depth)
    expect(server!.depth).toBeGreaterThan(client!.depth)
    expect(jobSpan!.depth).toBeGreaterThan(server!.depth)
    expect(attempt!.depth).toBe(jobSpan!.depth + 2)
    expect(pricesSpan!.depth).toBe(jobSpan!.depth + 4)
    // The key explains the labels used.
    expect(lines.at(-1)).toMatch(/^key: trace = id prefix, spans, first start to last end; left = /)
  })
})
