import { DEADLINE_HEADER, MAX_TIMER_MS } from '@hourglass/core'
import { type Agent, request } from 'undici'
import { CASE_ID_HEADER } from './Chain.js'

/** One request of the demo's traffic: sent `atMs` after the start, with a budget. */
export interface Case {
  id: string
  atMs: number
  budgetMs: number
}

/** What the client saw. Times are `performance.now()` ms. */
export interface ClientResult {
  caseId: string
  budgetMs: number
  sentAt: number
  /** The status received, or undefined when the client gave up first. */
  status: number | undefined
  /** When the answer arrived, or when the client gave up. */
  doneAt: number
  gaveUp: boolean
}

/**
 * A patient client: it states its budget in `x-deadline-remaining-ms`, waits
 * `graceMs` past it, then gives up and closes the connection — what a user
 * pressing "stop" (or a load balancer's timeout) does.
 */
export async function sendCase(
  url: string,
  c: Case,
  graceMs: number,
  agent: Agent,
): Promise<ClientResult> {
  const controller = new AbortController()
  const sentAt = performance.now()
  // Capped where Node's timers end: runDemo() takes a budget and a grace of
  // up to 2^31 − 1 ms each, and a timer past that fired after 1 ms, giving
  // up on every request at once (24.8 days is as good as never, here).
  const timer = setTimeout(() => controller.abort(), Math.min(c.budgetMs + graceMs, MAX_TIMER_MS))
  try {
    const res = await request(url, {
      method: 'POST',
      dispatcher: agent,
      signal: controller.signal,
      headers: {
        'content-type': 'application/json',
        [DEADLINE_HEADER]: String(c.budgetMs),
        [CASE_ID_HEADER]: c.id,
      },
      body: JSON.stringify({ question: `Question ${c.id}: why is the sky blue?` }),
    })
    await res.body.dump()
    const doneAt = performance.now()
    return {
      caseId: c.id,
      budgetMs: c.budgetMs,
      sentAt,
      status: res.statusCode,
      doneAt,
      gaveUp: false,
    }
  } catch {
    const doneAt = performance.now()
    return { caseId: c.id, budgetMs: c.budgetMs, sentAt, status: undefined, doneAt, gaveUp: true }
  } finally {
    clearTimeout(timer)
  }
}

/** The demo's traffic: `count` requests every `everyMs`, budgets taken in turn. */
export function makeCases(count: number, everyMs: number, budgetsMs: readonly number[]): Case[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `r${String(i + 1).padStart(2, '0')}`,
    atMs: i * everyMs,
    budgetMs: budgetsMs[i % budgetsMs.length]!,
  }))
}
