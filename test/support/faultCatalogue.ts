import type { Fault } from '@hourglass/testkit'
import {
  anthropicErrors,
  ernieErrors,
  openAIErrors,
  type ProviderReply,
  qwenErrors,
  reply,
} from '@hourglass/testkit'
import { weighted } from './seededRandom.js'

/**
 * Every fault the chaos run injects, by name. `upstream` faults are served by
 * a testkit `faultServer` behind the second hop's `@hourglass/fetch`; `llm`
 * faults by a testkit fake provider behind the second hop's `callModel`;
 * `refuse` and `dns-never` never reach a server at all.
 */
export type FaultKind =
  | 'ok'
  | 'slow-first-byte'
  | 'stall-mid-body'
  | 'slow-stream'
  | 'headers-then-stall'
  | 'reset'
  | 'close'
  | 'refuse'
  | 'hang'
  | '429-retry-after'
  | '503-retry-after-date'
  | '529-retry-after'
  | '429-bare'
  | '503-bare'
  | 'dns-never'
  | 'llm-ok'
  | 'llm-ok-split-utf8'
  | 'llm-200-error-qwen'
  | 'llm-200-error-ernie'
  | 'llm-stream-error'
  | 'llm-cut'
  | 'llm-slow-first-token'
  | 'llm-hang'
  | 'llm-429'
  | 'llm-529'

/** Text with 2-, 3- and 4-byte characters: a split one shows up as U+FFFD. */
export const UPSTREAM_TEXT = 'ok — héllo 你好世界 🎉👍🏽'
export const MODEL_TEXT = 'Bonjour 你好 世界 🎉 ça va? 👍🏽 𝄞 fin.'

/** Which faults can end in a 200 at all (every other one must not). */
export const CAN_SUCCEED: ReadonlySet<FaultKind> = new Set<FaultKind>([
  'ok',
  'slow-first-byte',
  'slow-stream',
  'llm-ok',
  'llm-ok-split-utf8',
  'llm-slow-first-token',
])

export const isModelFault = (kind: FaultKind) => kind.startsWith('llm-')

/** Bytes a 200 from the `slow-stream` fault must carry. */
export const SLOW_STREAM = { chunks: 4, chunkBytes: 16 } as const

/** The fault server's behaviour for one upstream fault; `random` is per request. */
export function upstreamFault(kind: FaultKind, random: () => number): Fault {
  const ms = (min: number, max: number) => Math.round(min + random() * (max - min))
  switch (kind) {
    case 'ok':
      return { type: 'respond', body: UPSTREAM_TEXT, delayMs: ms(0, 10) }
    case 'slow-first-byte':
      return { type: 'respond', body: UPSTREAM_TEXT, delayMs: ms(30, 900) }
    case 'stall-mid-body':
      return { type: 'bytes-then-stall', bytes: 64 }
    case 'slow-stream':
      return { type: 'stream', ...SLOW_STREAM, intervalMs: ms(5, 200) }
    case 'headers-then-stall':
      return { type: 'headers-then-stall', delayMs: ms(0, 50) }
    case 'reset':
      return { type: 'reset', delayMs: ms(0, 50) }
    case 'close':
      return { type: 'close', delayMs: ms(0, 50) }
    case 'hang':
      return { type: 'hang' }
    case '429-retry-after':
      return { type: 'retry-after', status: 429, retryAfter: 1 }
    case '503-retry-after-date':
      return { type: 'retry-after', status: 503, retryAfter: new Date(Date.now() + 2000) }
    case '529-retry-after':
      return { type: 'retry-after', status: 529, retryAfter: 0 }
    case '429-bare':
      return { type: 'respond', status: 429, body: '{"error":"slow down"}' }
    case '503-bare':
      return { type: 'respond', status: 503, body: 'unavailable' }
    default:
      // refuse, dns-never and the model faults never reach the fault server.
      return { type: 'respond', status: 500, body: `not an upstream fault: ${kind}` }
  }
}

/** The fake provider's reply for one model fault. */
export function modelReply(kind: FaultKind, random: () => number): ProviderReply {
  const ms = (min: number, max: number) => Math.round(min + random() * (max - min))
  switch (kind) {
    case 'llm-ok':
      return reply.text(MODEL_TEXT)
    case 'llm-ok-split-utf8':
      return reply.text(MODEL_TEXT, { splitBytes: 1 + Math.floor(random() * 3), tokenDelayMs: 1 })
    case 'llm-200-error-qwen':
      return qwenErrors.throttlingIn200()
    case 'llm-200-error-ernie':
      return ernieErrors.rateLimited('rpm')
    case 'llm-stream-error':
      return qwenErrors.throttlingInStream({ afterTokens: 2 })
    case 'llm-cut':
      return reply.text(MODEL_TEXT, { cutAfterTokens: 3 })
    case 'llm-slow-first-token':
      return reply.text(MODEL_TEXT, { firstTokenDelayMs: ms(30, 900), splitBytes: 2 })
    case 'llm-hang':
      return reply.hang()
    case 'llm-429':
      return openAIErrors.rateLimited({ retryAfterS: 1 })
    case 'llm-529':
      return anthropicErrors.overloaded()
    default:
      return reply.error(500, { error: { message: `not a model fault: ${kind}` } })
  }
}

/** The mix: every fault, the healthy answers a little more often. */
export const FAULT_MIX: readonly (readonly [FaultKind, number])[] = [
  ['ok', 8],
  ['slow-first-byte', 5],
  ['stall-mid-body', 3],
  ['slow-stream', 3],
  ['headers-then-stall', 3],
  ['reset', 3],
  ['close', 2],
  ['refuse', 3],
  ['hang', 3],
  ['429-retry-after', 2],
  ['503-retry-after-date', 2],
  ['529-retry-after', 2],
  ['429-bare', 2],
  ['503-bare', 2],
  ['dns-never', 3],
  ['llm-ok', 2],
  ['llm-ok-split-utf8', 6],
  ['llm-200-error-qwen', 2],
  ['llm-200-error-ernie', 2],
  ['llm-stream-error', 2],
  ['llm-cut', 2],
  ['llm-slow-first-token', 4],
  ['llm-hang', 2],
  ['llm-429', 2],
  ['llm-529', 2],
]

/** Budgets sent by the client, ms: spent on arrival, tight, and roomy. */
export const BUDGET_MIX: readonly (readonly [number, number])[] = [
  [0, 1],
  [5, 1],
  [30, 2],
  [80, 3],
  [150, 3],
  [300, 3],
  [600, 2],
  [1000, 1],
]

export const pickFault = (random: () => number) => weighted(random, FAULT_MIX)
export const pickBudget = (random: () => number) => weighted(random, BUDGET_MIX)
