import type { AttemptTimings } from './Attempt.js'
import { type CreateFetchOptions, createFetch } from './createFetch.js'

export interface ProbeOptions extends Omit<CreateFetchOptions, 'retry' | 'dispatcher'> {
  /** Calls made first and not measured (JIT, caches, TLS sessions). Default 3. */
  warmup?: number
  /** Calls measured. Default 10. */
  samples?: number
  method?: string
  headers?: Record<string, string>
  body?: string
  /**
   * Open a new connection for every call, so DNS and connect are measured
   * too. Default `true`; `false` measures keep-alive calls (DNS and connect
   * then read 0).
   */
  freshConnections?: boolean
}

export interface PhaseStats {
  medianMs: number
  p90Ms: number
}

export interface ProbeSample extends AttemptTimings {
  status: number
}

export interface ProbeResult {
  url: string
  samples: ProbeSample[]
  /** Total time of one call (dispatch → last body byte). */
  medianMs: number
  p90Ms: number
  /** p90 / median. */
  ratio: number
  phases: { dns: PhaseStats; connect: PhaseStats; headers: PhaseStats; body: PhaseStats }
  /** Set when p90 ≥ 3 × median: a fixed timeout would be a lottery. */
  warning: string | undefined
}

/**
 * Warm an endpoint, then time `samples` sequential calls and report median,
 * p90, their ratio and per-phase timings — the data to size slices from
 * (DESIGN.md: "a probe warms an endpoint (3 calls), measures 10").
 * Percentiles are nearest-rank. Calls run without retries.
 */
export async function probe(url: string | URL, options: ProbeOptions = {}): Promise<ProbeResult> {
  const { warmup = 3, samples = 10, method, headers, body, freshConnections = true } = options
  if (!Number.isInteger(samples) || samples < 1)
    throw new TypeError('samples must be an integer ≥ 1')
  const measured: ProbeSample[] = []
  let shared: ReturnType<typeof createFetch> | undefined
  for (let i = 0; i < warmup + samples; i++) {
    let timings: AttemptTimings | undefined
    const fetch =
      !freshConnections && shared
        ? shared
        : createFetch(
            { ...options, retry: false },
            { onAttempt: (a) => (timings = { ...a.timings }) },
          )
    if (!freshConnections) shared = fetch
    try {
      const res = await fetch(url, {
        ...(method ? { method } : {}),
        ...(headers ? { headers } : {}),
        ...(body !== undefined ? { body } : {}),
      })
      await res.arrayBuffer()
      if (i >= warmup && timings) measured.push({ ...timings, status: res.status })
    } finally {
      if (freshConnections) await fetch.close()
    }
  }
  await shared?.close()
  const total = stats(measured.map((s) => s.totalMs ?? 0))
  const ratio = total.medianMs > 0 ? total.p90Ms / total.medianMs : 1
  return {
    url: String(url),
    samples: measured,
    medianMs: total.medianMs,
    p90Ms: total.p90Ms,
    ratio,
    phases: {
      dns: stats(measured.map((s) => s.dnsMs ?? 0)),
      connect: stats(measured.map((s) => s.connectMs ?? 0)),
      headers: stats(measured.map((s) => s.headersMs ?? 0)),
      body: stats(measured.map((s) => s.bodyMs ?? 0)),
    },
    warning:
      ratio >= 3
        ? `p90 (${round(total.p90Ms)} ms) is ${round(ratio)}× the median (${round(total.medianMs)} ms): a fixed timeout here is a lottery; budget for the tail or fix it`
        : undefined,
  }
}

function stats(values: number[]): PhaseStats {
  return { medianMs: percentile(values, 0.5), p90Ms: percentile(values, 0.9) }
}

/** Nearest-rank percentile. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

function round(n: number): number {
  return Math.round(n * 10) / 10
}
