import { wait } from '@hourglass/core'
import { Agent } from 'undici'
import type { Chain } from './Chain.js'
import type { DemoFigures } from './DemoFigures.js'
import { startNaiveChain } from './naiveChain.js'
import { type ClientResult, makeCases, sendCase } from './sendTraffic.js'
import { pickWaterfall, summarize } from './summarize.js'
import { startToolkitChain } from './toolkitChain.js'

export interface RunDemoOptions {
  /** Seeds every random draw (provider latency, faults, preprocessing). Default 7. */
  seed?: number
  /** Requests sent to each chain. Default 30. */
  requests?: number
  /** One request every this many ms. Default 120. */
  everyMs?: number
  /** Budgets, taken in turn. Default 300 ms, 1 s, 2 s. */
  budgetsMs?: number[]
  /** How long past its deadline the client waits before giving up, ms. Default 250. */
  graceMs?: number
  /** After the last client is done, wait at most this long for upstream work to stop, ms. Default 6000. */
  drainMs?: number
  /** Called as requests complete (for a progress line). */
  onProgress?: (progress: { done: number; total: number; phase: 'traffic' | 'drain' }) => void
}

/**
 * Start both chains, send the same traffic through each at the same time,
 * wait for the upstream work to stop (or `drainMs`), and return the figures.
 */
export async function runDemo(options: RunDemoOptions = {}): Promise<DemoFigures> {
  const seed = options.seed ?? 7
  const budgetsMs = options.budgetsMs ?? [300, 1000, 2000]
  const graceMs = options.graceMs ?? 250
  const cases = makeCases(options.requests ?? 30, options.everyMs ?? 120, budgetsMs)
  const started = performance.now()
  const chains: Chain[] = await Promise.all([startToolkitChain(seed), startNaiveChain(seed)])
  const [toolkit, naive] = chains as [Chain, Chain]
  const agent = new Agent({ connections: 256 })
  const trafficStart = performance.now()
  try {
    const total = cases.length * 2
    let done = 0
    const send = (chain: Chain) =>
      Promise.all(
        cases.map(async (c) => {
          await delayUntil(trafficStart, c.atMs)
          const result = await sendCase(chain.url, c, graceMs, agent)
          options.onProgress?.({ done: ++done, total, phase: 'traffic' })
          return result
        }),
      )
    const [toolkitResults, naiveResults] = (await Promise.all([send(toolkit), send(naive)])) as [
      ClientResult[],
      ClientResult[],
    ]
    options.onProgress?.({ done, total, phase: 'drain' })
    await waitIdle(chains, options.drainMs ?? 6000)
    const now = performance.now()
    return {
      seed,
      budgetsMs,
      graceMs,
      elapsedMs: Math.round(now - started),
      toolkit: summarize(toolkit, toolkitResults, now),
      naive: summarize(naive, naiveResults, now),
      waterfall: pickWaterfall(toolkit.slices, toolkitResults),
    }
  } finally {
    await agent.close()
    await Promise.all(chains.map((c) => c.close()))
  }
}

async function delayUntil(started: number, atMs: number): Promise<void> {
  await wait(started + atMs - performance.now())
}

/** Every chain idle, or `capMs` passed — whichever comes first. */
async function waitIdle(chains: readonly Chain[], capMs: number): Promise<void> {
  await wait(capMs, {
    wakeOn: (wake) => {
      let waiting = true
      void Promise.all(chains.map((c) => c.log.idle())).then(() => waiting && wake())
      return () => {
        waiting = false
      }
    },
  })
}
