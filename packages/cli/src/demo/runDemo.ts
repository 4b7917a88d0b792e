import { optionError, refuseUnknownOptions, wait } from '@hourglass/core'
import { Agent } from 'undici'
import { kindError } from '../kindError.js'
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
  checkOptions(options)
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

const MAX_INT32 = 2 ** 31 - 1

const OPTION_NAMES: readonly (keyof RunDemoOptions)[] = [
  'seed',
  'requests',
  'everyMs',
  'budgetsMs',
  'graceMs',
  'drainMs',
  'onProgress',
]

/**
 * Judged before any server starts, as the CLI judges its flags: `budgetsMs:
 * []` ran 30 requests with an `undefined` budget, a seed `'x'` ran as if
 * given, a negative budget was sent as a header — figures of nothing, with
 * no word of why.
 */
function checkOptions(options: RunDemoOptions): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw kindError('options', 'an object (RunDemoOptions)', options)
  }
  // `{ budgetMs: [500] }` ran the defaults without a word.
  refuseUnknownOptions(options, OPTION_NAMES, 'runDemo()')
  const whole = (name: keyof RunDemoOptions, min: number, max: number) => {
    const value = options[name]
    if (value === undefined) return
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw optionError(name, `a whole number from ${min} to ${max}`, value)
    }
  }
  whole('seed', 0, MAX_INT32)
  whole('requests', 1, 10_000)
  whole('everyMs', 0, MAX_INT32)
  whole('graceMs', 0, MAX_INT32)
  whole('drainMs', 0, MAX_INT32)
  const { budgetsMs, onProgress } = options
  if (
    budgetsMs !== undefined &&
    (!Array.isArray(budgetsMs) ||
      budgetsMs.length === 0 ||
      budgetsMs.some(
        (ms) => typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > MAX_INT32,
      ))
  ) {
    // Out of range when it is an array; of the wrong kind (`budgetsMs: 500`) otherwise.
    const rule = `a non-empty array of whole numbers of ms from 1 to ${MAX_INT32}`
    throw Array.isArray(budgetsMs)
      ? optionError('budgetsMs', rule, budgetsMs)
      : kindError('budgetsMs', rule, budgetsMs)
  }
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw kindError('onProgress', 'a function', onProgress)
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
