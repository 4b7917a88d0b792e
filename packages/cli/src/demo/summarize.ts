import type { SliceReport } from '@hourglass/core'
import type { Chain } from './Chain.js'
import type { ClientResult } from './sendTraffic.js'

/** The figures the demo prints for one chain (all times in ms). */
export interface ChainFigures {
  requests: number
  /** 200s that arrived by the deadline. */
  onTime: number
  onTimeByBudget: Record<string, { onTime: number; requests: number }>
  /** 200s that arrived after the deadline (the client waited a little longer). */
  late: number
  /** 504s, and when they arrived relative to the deadline (negative = before it). */
  timeouts504: number
  timeout504VsDeadlineMs: { median: number; max: number } | null
  /** The latest any answer (of any status) arrived, relative to its deadline; null when none arrived. */
  latestAnswerVsDeadlineMs: number | null
  /** Any other status (502, 503, 500, …). */
  otherErrors: number
  /** Requests the client gave up on, with no answer. */
  gaveUp: number
  /** Upstream work after the client had its answer or gave up. */
  zombie: {
    /** Requests some hop still worked on after that moment. */
    requests: number
    totalMs: number
    maxMs: number
    /** Requests still being worked on when the demo stopped (their figures are lower bounds). */
    stillRunningAtEnd: number
  }
  providerCalls: number
  paidGenerations: number
  /** `paidGenerations / onTime`; null when nothing was delivered. */
  paidPerDelivered: number | null
}

/** Work that ends this soon after the client's answer is unwinding, not working on. */
const UNWIND_MS = 1

export function summarize(
  chain: Chain,
  results: readonly ClientResult[],
  now: number,
): ChainFigures {
  const onTimeByBudget: ChainFigures['onTimeByBudget'] = {}
  const vs504: number[] = []
  const zombie = { requests: 0, totalMs: 0, maxMs: 0, stillRunningAtEnd: 0 }
  let onTime = 0
  let late = 0
  let otherErrors = 0
  let gaveUp = 0
  let latest: number | null = null
  for (const r of results) {
    const elapsed = r.doneAt - r.sentAt
    const key = String(r.budgetMs)
    onTimeByBudget[key] ??= { onTime: 0, requests: 0 }
    const row = onTimeByBudget[key]
    row.requests++
    if (!r.gaveUp) latest = Math.max(latest ?? -Infinity, elapsed - r.budgetMs)
    if (r.gaveUp) gaveUp++
    else if (r.status === 200 && elapsed <= r.budgetMs) {
      onTime++
      row.onTime++
    } else if (r.status === 200) late++
    else if (r.status === 504) vs504.push(elapsed - r.budgetMs)
    else otherErrors++
    const last = chain.log.lastWorkAt(r.caseId, now)
    if (last === undefined) continue
    const after = last.at - r.doneAt
    if (last.stillRunning) zombie.stillRunningAtEnd++
    if (after > UNWIND_MS) {
      zombie.requests++
      zombie.totalMs += after
      zombie.maxMs = Math.max(zombie.maxMs, after)
    }
  }
  vs504.sort((a, b) => a - b)
  const paid = chain.provider.paidGenerations
  return {
    requests: results.length,
    onTime,
    onTimeByBudget,
    late,
    timeouts504: vs504.length,
    timeout504VsDeadlineMs:
      vs504.length === 0
        ? null
        : {
            median: Math.round(vs504[Math.floor((vs504.length - 1) / 2)]!),
            max: Math.round(vs504[vs504.length - 1]!),
          },
    latestAnswerVsDeadlineMs: latest === null ? null : Math.round(latest),
    otherErrors,
    gaveUp,
    zombie: {
      ...zombie,
      totalMs: Math.round(zombie.totalMs),
      maxMs: Math.round(zombie.maxMs),
    },
    providerCalls: chain.provider.requests.length,
    paidGenerations: paid,
    paidPerDelivered: onTime === 0 ? null : Math.round((paid / onTime) * 100) / 100,
  }
}

/** One request's slices, for the waterfall. */
export interface WaterfallFigures {
  caseId: string
  budgetMs: number
  status: number | undefined
  slices: { name: string; allottedMs: number; usedMs: number; outcome: string }[]
}

/**
 * Pick the request that tells the story best: a 1 s request whose model
 * slice ran out (the 504 names it), else a 1 s request answered 200 (its
 * slices all ok), else any 1 s request, else the first. Never a 504 whose
 * slices all look fine when another request tells a consistent story.
 */
export function pickWaterfall(
  slices: ReadonlyMap<string, SliceReport[]>,
  results: readonly ClientResult[],
): WaterfallFigures | null {
  const withSlices = results.filter((r) => slices.has(r.caseId))
  const model = (r: ClientResult) => slices.get(r.caseId)!.find((s) => s.name === 'model')
  const pick =
    withSlices.find((r) => r.budgetMs === 1000 && model(r)?.outcome === 'exceeded') ??
    withSlices.find((r) => r.budgetMs === 1000 && r.status === 200) ??
    withSlices.find((r) => r.budgetMs === 1000) ??
    withSlices[0]
  if (pick === undefined) return null
  return {
    caseId: pick.caseId,
    budgetMs: pick.budgetMs,
    status: pick.status,
    slices: slices.get(pick.caseId)!.map((s) => ({
      name: s.name,
      allottedMs: Math.round(s.allottedMs),
      usedMs: Math.round(s.usedMs),
      outcome: s.outcome,
    })),
  }
}
