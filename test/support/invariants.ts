import { MAX_RESERVE_MS } from '@hourglass/core'
import type { Chain } from './chain.js'
import type { HopView, Outcome } from './drive.js'
import {
  CAN_SUCCEED,
  type FaultKind,
  isModelFault,
  MODEL_TEXT,
  SLOW_STREAM,
  UPSTREAM_TEXT,
} from './faultCatalogue.js'

/** The per-request promises, each checked once per request it applies to. */
export type InvariantName =
  | 'answered by deadline + 15 ms (beyond the loop) or client left'
  | 'the model service stopped within 15 ms (beyond the loop) of the edge giving up'
  | 'upstream work stopped within 15 ms (beyond the loop) of the service giving up'
  | 'side effect ran at most once'
  | 'upstream received a non-idempotent POST at most once'
  | 'no 200 with an empty, half or wrong body'
  | 'no U+FFFD in any text'
  | 'every answer is a JSON 200/429/502/504; a 504 says x-deadline-expired'
  | 'the client saw an answer or left (no reset, no hang)'

export const SLACK_MS = 15

export interface Figures {
  /** arrival − the caller's deadline as the edge measured it (ms; negative = early). */
  rawLateness: number[]
  /**
   * The same, for requests whose budget leaves room for the largest reserve
   * (> MAX_RESERVE_MS): a request that arrives with less is answered at
   * arrival, already late by its own transit.
   */
  roomyLateness: number[]
  /** arrival − max(deadline, a plain timer armed for it): what the toolkit added. */
  addedLateness: number[]
  /** arrival − (client send + budget): the client's own view, transit included. */
  clientLateness: number[]
  /** next hop's stop − its caller's deadline, for work still running then. */
  stopAfterDeadline: number[]
  /** next hop's stop − its caller's departure, for work still running then. */
  stopAfterDisconnect: number[]
  /** How late the next hop received a request, after its caller had already given up. */
  lateArrivals: number[]
}

/** The promises about time: on a shared machine a stalled process can break one without any bug. */
export const TIMING_INVARIANTS: ReadonlySet<InvariantName> = new Set<InvariantName>([
  'answered by deadline + 15 ms (beyond the loop) or client left',
  'the model service stopped within 15 ms (beyond the loop) of the edge giving up',
  'upstream work stopped within 15 ms (beyond the loop) of the service giving up',
])

export interface Violation {
  invariant: InvariantName
  /** For timing promises: ms past the bound (Infinity = never). */
  excessMs: number
  text: string
}

export interface Verdict {
  checks: Map<InvariantName, number>
  violations: Violation[]
  figures: Figures
  statuses: Map<string, number>
  faults: Map<FaultKind, number>
}

function expectedBody(kind: FaultKind): Record<string, unknown> | undefined {
  if (kind === 'ok' || kind === 'slow-first-byte') return { upstream: UPSTREAM_TEXT }
  if (kind === 'slow-stream')
    return { upstream: 'x'.repeat(SLOW_STREAM.chunks * SLOW_STREAM.chunkBytes) }
  if (kind === 'llm-ok' || kind === 'llm-ok-split-utf8' || kind === 'llm-slow-first-token') {
    return { text: MODEL_TEXT }
  }
  return undefined
}

/**
 * When a hop's caller gave up (`limit`: its deadline or its departure,
 * whichever came first) and when a loopback byte sent at that moment arrived
 * (`control`: the event loop's own lateness is not the toolkit's).
 */
function stopBound(
  hop: HopView | undefined,
): { limit: number; control: number; byDisconnect: boolean } | undefined {
  if (!hop) return undefined
  const byDisconnect = hop.clientClosedAt !== undefined && hop.clientClosedAt < hop.dueAt
  const limit = byDisconnect ? hop.clientClosedAt! : hop.dueAt
  // Stopping the next hop takes one loopback message (a FIN): the yardstick is
  // a byte sent at the same moment, which a loaded event loop delays alike.
  const fired = byDisconnect ? hop.closedControlAt : hop.duePingAt
  return { limit, control: Math.max(limit, fired ?? limit), byDisconnect }
}

/** Check every invariant for every request; `violations` names the request and the promise broken. */
export function checkInvariants(outcomes: readonly Outcome[], chain: Chain): Verdict {
  const checks = new Map<InvariantName, number>()
  const violations: Violation[] = []
  const statuses = new Map<string, number>()
  const faults = new Map<FaultKind, number>()
  const figures: Figures = {
    rawLateness: [],
    roomyLateness: [],
    addedLateness: [],
    clientLateness: [],
    stopAfterDeadline: [],
    stopAfterDisconnect: [],
    lateArrivals: [],
  }
  const check = (
    name: InvariantName,
    ok: boolean,
    o: Outcome,
    detail: () => string,
    excessMs = Number.NaN,
  ) => {
    checks.set(name, (checks.get(name) ?? 0) + 1)
    if (!ok) {
      violations.push({
        invariant: name,
        excessMs,
        text: `op ${o.op} (${o.kind}, ${o.budgetMs} ms${o.abortAfterMs === undefined ? '' : `, left after ${o.abortAfterMs} ms`}): ${name}: ${detail()}`,
      })
    }
  }
  const upstreamByOp = new Map<string, typeof chain.upstream.records>()
  for (const r of chain.upstream.records) {
    const op = String(r.headers['x-op-id'])
    upstreamByOp.set(op, [...(upstreamByOp.get(op) ?? []), r])
  }

  for (const o of outcomes) {
    faults.set(o.kind, (faults.get(o.kind) ?? 0) + 1)
    const statusKey = o.arrivedAt === undefined ? 'client left' : String(o.status)
    statuses.set(statusKey, (statuses.get(statusKey) ?? 0) + 1)
    const left = o.abortedAt !== undefined && o.arrivedAt === undefined

    check(
      'the client saw an answer or left (no reset, no hang)',
      o.arrivedAt !== undefined || left,
      o,
      () => `client error ${String((o.clientError as Error | undefined)?.message)}`,
    )

    if (o.arrivedAt !== undefined) {
      const due = o.dueAt ?? o.sentAt + o.budgetMs
      const added = o.arrivedAt - Math.max(due, o.controlFiredAt ?? due)
      figures.rawLateness.push(o.arrivedAt - due)
      if (o.budgetMs > MAX_RESERVE_MS) figures.roomyLateness.push(o.arrivedAt - due)
      figures.addedLateness.push(added)
      figures.clientLateness.push(o.arrivedAt - (o.sentAt + o.budgetMs))
      check(
        'answered by deadline + 15 ms (beyond the loop) or client left',
        o.dueAt !== undefined && added <= SLACK_MS,
        o,
        () =>
          `arrived ${(o.arrivedAt! - due).toFixed(1)} ms after the deadline, ${added.toFixed(1)} ms after a timer due then`,
        o.dueAt === undefined ? Number.POSITIVE_INFINITY : added - SLACK_MS,
      )
      check(
        'no U+FFFD in any text',
        !o.body.includes('\uFFFD'),
        o,
        () => `body ${JSON.stringify(o.body.slice(0, 120))}`,
      )
      let parsed: Record<string, unknown> | undefined
      try {
        parsed = JSON.parse(o.body) as Record<string, unknown>
      } catch {
        parsed = undefined
      }
      check(
        'every answer is a JSON 200/429/502/504; a 504 says x-deadline-expired',
        parsed !== undefined &&
          [200, 429, 502, 504].includes(o.status ?? 0) &&
          (o.status !== 504 || o.deadlineExpiredHeader),
        o,
        () => `status ${o.status}, body ${JSON.stringify(o.body.slice(0, 120))}`,
      )
      if (o.status === 200) {
        const expected = expectedBody(o.kind)
        check(
          'no 200 with an empty, half or wrong body',
          CAN_SUCCEED.has(o.kind) &&
            expected !== undefined &&
            parsed !== undefined &&
            Object.entries(expected).every(([k, v]) => parsed[k] === v),
          o,
          () => `200 with ${JSON.stringify(o.body.slice(0, 160))}`,
        )
      }
    }

    // Each hop's upstream work stops within 15 ms of the moment that hop's
    // caller gave up: its deadline, or its departure. A request that reached
    // the next hop only after that moment (transit ate its budget) is judged
    // from its arrival there — or, on a loaded loop, from when a loopback byte
    // sent at its arrival came through: the caller's departure is already
    // waiting in the hop's socket and is read no sooner than that.
    const edgeStop = stopBound(o.edge)
    if (o.edge && o.service && edgeStop) {
      const stop = o.service.endedAt ?? Number.POSITIVE_INFINITY
      const bound = Math.max(
        edgeStop.control,
        o.service.startedAt,
        o.service.lateArrivalControlAt ?? o.service.startedAt,
      )
      if (stop > edgeStop.limit && Number.isFinite(stop)) {
        ;(edgeStop.byDisconnect ? figures.stopAfterDisconnect : figures.stopAfterDeadline).push(
          stop - edgeStop.limit,
        )
      }
      check(
        'the model service stopped within 15 ms (beyond the loop) of the edge giving up',
        stop <= bound + SLACK_MS,
        o,
        () =>
          `released ${(stop - edgeStop.limit).toFixed(1)} ms after the edge's ${edgeStop.byDisconnect ? 'client left' : 'deadline'} (it arrived ${(o.service!.startedAt - edgeStop.limit).toFixed(1)} ms after${o.service!.lateArrivalControlAt === undefined ? '' : `, a byte sent then took ${(o.service!.lateArrivalControlAt - o.service!.startedAt).toFixed(1)} ms`})`,
        stop - bound - SLACK_MS,
      )
    }
    if (o.service && edgeStop && o.service.startedAt > edgeStop.limit) {
      figures.lateArrivals.push(o.service.startedAt - edgeStop.limit)
    }
    const serviceStop = stopBound(o.service)
    if (o.service && serviceStop) {
      const stops: [number, number][] = []
      for (const r of upstreamByOp.get(o.op) ?? []) {
        if (r.serverAborted) continue
        stops.push([r.finishedAt ?? r.clientGoneAt ?? Number.POSITIVE_INFINITY, r.startedAt])
      }
      if (isModelFault(o.kind) && chain.upstreamSettledAt.has(o.op)) {
        stops.push([chain.upstreamSettledAt.get(o.op)!, o.service.startedAt])
      }
      for (const [stop, arrived] of stops) {
        if (stop > serviceStop.limit && Number.isFinite(stop)) {
          ;(serviceStop.byDisconnect
            ? figures.stopAfterDisconnect
            : figures.stopAfterDeadline
          ).push(stop - serviceStop.limit)
        }
        check(
          'upstream work stopped within 15 ms (beyond the loop) of the service giving up',
          stop <= Math.max(serviceStop.control, arrived) + SLACK_MS,
          o,
          () =>
            Number.isFinite(stop)
              ? `stopped ${(stop - serviceStop.limit).toFixed(1)} ms after the service's ${serviceStop.byDisconnect ? 'client left' : 'deadline'} (arrived ${(arrived - serviceStop.limit).toFixed(1)} ms after it, loop late ${(serviceStop.control - serviceStop.limit).toFixed(1)})`
              : 'never stopped',
          stop - Math.max(serviceStop.control, arrived) - SLACK_MS,
        )
      }
    }

    const received = chain.serviceReceipts.get(o.op) ?? 0
    if (!isModelFault(o.kind) && received > 0) {
      check(
        'side effect ran at most once',
        (chain.effectRuns.get(o.op) ?? 0) <= 1 && received <= 1,
        o,
        () => `ran ${chain.effectRuns.get(o.op)} times for ${received} receipts`,
      )
    }
    const upstreamCount = upstreamByOp.get(o.op)?.length ?? 0
    if (upstreamCount > 0) {
      check(
        'upstream received a non-idempotent POST at most once',
        upstreamCount <= 1,
        o,
        () => `received ${upstreamCount} times`,
      )
    }
  }
  return { checks, violations, figures, statuses, faults }
}

/**
 * Fold a round's verdict into a run's: counts summed, violations and figures
 * appended. A run judged round by round keeps only this, not every round's
 * outcomes and records. `run` is updated and returned; an empty run is
 * `mergeVerdicts(undefined, first)`.
 */
export function mergeVerdicts(run: Verdict | undefined, round: Verdict): Verdict {
  if (run === undefined) return round
  const add = <K>(into: Map<K, number>, from: Map<K, number>) => {
    for (const [key, n] of from) into.set(key, (into.get(key) ?? 0) + n)
  }
  add(run.checks, round.checks)
  add(run.statuses, round.statuses)
  add(run.faults, round.faults)
  run.violations.push(...round.violations)
  for (const name of Object.keys(run.figures) as (keyof Figures)[]) {
    run.figures[name].push(...round.figures[name])
  }
  return run
}
