import type { Job } from 'bullmq'
import { runScript } from './redisTime.js'

/**
 * BullMQ's moveToActive counts every job it hands a worker against the rate
 * limit (the queue's global one, `queue.setGlobalRateLimit`, or the worker's
 * `limiter`) — except a job it will fail unrun itself (a deferred failure,
 * `defa`). A job withDeadline fails unrun for its deadline is such a job:
 * counted, every expired job in a backlog held one slot of the limit, and a
 * live job queued behind them waited out one window per dead job — to reach
 * the worker after its own deadline in turn. Give the slot back, only while
 * the window that counted it is still open (its TTL no longer than
 * `duration` less the time since the fetch, a few ms of slack for the INCR
 * coming just after the fetch's timestamp): a slot of a later window is
 * another job's.
 */
const LUA = `
local max = tonumber(redis.call('HGET', KEYS[2], 'max') or ARGV[1])
if not max then return 0 end
local duration = tonumber(ARGV[2]) or tonumber(redis.call('HGET', KEYS[2], 'duration'))
local count = tonumber(redis.call('GET', KEYS[1]) or 0)
if not duration or count <= 0 then return 0 end
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 and pttl <= duration - tonumber(ARGV[3]) + 50 then
  redis.call('DECR', KEYS[1])
  return 1
end
return 0`

interface WorkerLike {
  readonly keys?: { limiter?: string; meta?: string }
  readonly opts?: { limiter?: { max?: number; duration?: number } }
}

/** @internal Give back the rate-limit slot a job failed unrun was counted against. */
export async function giveBackRateLimitSlot(
  job: Job,
  client: Parameters<typeof runScript>[0],
): Promise<void> {
  const worker = (job as unknown as { queue?: WorkerLike }).queue
  const limiterKey = worker?.keys?.limiter
  const metaKey = worker?.keys?.meta
  if (!limiterKey || !metaKey) return
  const limiter = worker.opts?.limiter
  const sinceFetch = Math.max(0, Date.now() - (job.processedOn ?? Date.now()))
  await runScript(
    client,
    'hourglassGiveBackSlot',
    LUA,
    [limiterKey, metaKey],
    [String(limiter?.max ?? ''), String(limiter?.duration ?? ''), String(sinceFetch)],
  )
}
