import { type Deadline, untilEnded } from '@hourglass/core'
import type { JobsOptions } from 'bullmq'
import { type RedisTimeSample, runScript, scriptClientOf, toLocalMs } from './redisTime.js'
import { readStoredDeadline } from './storedDeadline.js'

// Through the same script abstraction as the clock reading (redisTime.ts).
// The delayed job a deduplication id holds, with its options: BullMQ's
// `reschedule` moves only a job that is delayed.
const COMMAND = 'hourglassDedupDelayed'
const LUA = `local id = redis.call('GET', KEYS[1])
if not id then return false end
if not redis.call('ZSCORE', KEYS[2], id) then return false end
return {id, redis.call('HGET', ARGV[1] .. id, 'opts')}`

/**
 * The deduplication id of an add BullMQ answers by moving the delayed job it
 * already has (`deduplication: { id, reschedule: true }`, without `replace`,
 * which BullMQ lets win): that job keeps its id, data and options — its
 * stored deadline among them — and takes this add's delay.
 */
export function mayReschedule(opts: JobsOptions): string | undefined {
  const d = (opts as { deduplication?: { id?: unknown; reschedule?: unknown; replace?: unknown } })
    .deduplication
  return d?.reschedule === true && d.replace !== true && typeof d.id === 'string' ? d.id : undefined
}

/**
 * The delayed job BullMQ would reschedule, and what it has left of its own
 * stored deadline, in ms on the local clock. Undefined when there is none
 * (no such job, not delayed, no deadline or a malformed or observe-only
 * one), or it could not be read in time: nothing is refused for it then.
 */
export async function rescheduledJob(
  queue: { readonly qualifiedName: string; readonly backend: unknown },
  dedupId: string,
  sample: RedisTimeSample,
  deadline: Deadline,
): Promise<{ id: string; leftMs: number } | undefined> {
  try {
    const client = await scriptClientOf(queue.backend)
    const prefix = `${queue.qualifiedName}:`
    // BullMQ's keys: the deduplication id's (`de:<id>`, holding the job id),
    // the delayed set, and each job's hash under the queue's prefix.
    const keys = [`${prefix}de:${dedupId}`, `${prefix}delayed`]
    const reply = await untilEnded(runScript(client, COMMAND, LUA, keys, [prefix]), { deadline })
    if (!Array.isArray(reply) || typeof reply[1] !== 'string') return undefined
    const kept = readStoredDeadline(JSON.parse(reply[1]))
    if (!kept || kept.observe) return undefined
    const leftMs = Math.max(0, toLocalMs(kept.expiresAtMs, sample) - deadline.clock.now())
    return { id: String(reply[0]), leftMs }
  } catch {
    return undefined
  }
}
