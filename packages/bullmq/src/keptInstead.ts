import { type Deadline, untilEnded } from '@hourglass/core'
import type { JobsOptions } from 'bullmq'
import { runScript, scriptClientOf } from './redisTime.js'
import {
  DEADLINE_OPTION,
  type ReadDeadline,
  readStoredDeadline,
  type StoredDeadline,
} from './storedDeadline.js'

// Through the same script abstraction as the clock reading (redisTime.ts), so
// it works with every client BullMQ supports; the key routes it, in a
// cluster, to the node that holds the queue.
const COMMAND = 'hourglassJobOpts'
const LUA = "return redis.call('HGET', KEYS[1], 'opts')"

/** Options with which BullMQ may hand back a job it already has instead of adding this one. */
export function mayBeDuplicate(opts: JobsOptions): boolean {
  const o = opts as JobsOptions & { debounce?: unknown; deduplication?: unknown }
  return o.jobId !== undefined || o.deduplication !== undefined || o.debounce !== undefined
}

/**
 * What BullMQ kept instead of the job just added, when it kept another: a
 * job with the same id (`jobId`, or a deduplication id) stays as it is, and
 * `queue.add` returns it as if added — carrying the new options in memory
 * only. Its stored deadline (`deadline`: undefined when it has none, or a
 * malformed one) is read back from Redis and told from the one just
 * written by the add's id (`StoredDeadline.addId`).
 *
 * Undefined when the job stored is the one just added — or is gone already
 * (removed on completion), or could not be read in time: then nothing is
 * known of another, and the job is reported as added. Never throws: the
 * job was added (or kept) either way, and this only corrects a report.
 */
export async function keptInstead(
  backend: unknown,
  jobKey: string,
  ours: StoredDeadline,
  deadline: Deadline,
): Promise<{ deadline: ReadDeadline | undefined } | undefined> {
  try {
    const client = await scriptClientOf(backend)
    const reply = await untilEnded(runScript(client, COMMAND, LUA, [jobKey]), { deadline })
    if (typeof reply !== 'string') return undefined
    const opts: unknown = JSON.parse(reply)
    // Told by the add's own id: two adds sharing a clock reading store the same expiry and budget.
    const addId = (opts as Record<string, { addId?: unknown } | undefined> | null)?.[
      DEADLINE_OPTION
    ]?.addId
    if (addId === ours.addId) return undefined
    return { deadline: readStoredDeadline(opts) }
  } catch {
    return undefined
  }
}
