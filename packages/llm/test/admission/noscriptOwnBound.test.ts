import { createHash } from 'node:crypto'
import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { RedisCooldownStore } from '../../src/admission/RedisCooldownStore.js'

/**
 * A Redis that answers every command within `rttMs` on the test's clock, and
 * that has no script loaded yet (a fresh server, one just restarted, after
 * `SCRIPT FLUSH`): the first `EVALSHA` of each script is answered `NOSCRIPT`,
 * the `EVAL` that follows loads it.
 */
function slowFreshRedis(clock: ManualClock, rttMs: number) {
  const loaded = new Set<string>()
  const sent: string[] = []
  const later = <T>(answer: () => T) =>
    new Promise<T>((resolve, reject) => {
      clock.setTimeout(() => {
        try {
          resolve(answer())
        } catch (error) {
          reject(error)
        }
      }, rttMs)
    })
  const reply = (args: Array<string | number>) =>
    args.includes('read')
      ? args.filter((a) => String(a).startsWith('c:')).map(() => 0)
      : [1, 60_000]
  return {
    sent,
    status: 'ready',
    evalsha(sha1: string, _keys: number, ...args: Array<string | number>) {
      sent.push('EVALSHA')
      return later(() => {
        if (!loaded.has(sha1)) throw new Error('NOSCRIPT No matching script. Please use EVAL.')
        return reply(args)
      })
    },
    eval(script: string, _keys: number, ...args: Array<string | number>) {
      sent.push('EVAL')
      return later(() => {
        loaded.add(createHash('sha1').update(script).digest('hex'))
        return reply(args)
      })
    },
  }
}

/** Settles `work`, moving the clock 10 ms per turn of the event loop. */
async function settle<T>(clock: ManualClock, work: Promise<T>) {
  let out: { value: T } | { error: unknown } | undefined
  work.then(
    (value) => (out = { value }),
    (error) => (out = { error }),
  )
  for (let i = 0; i < 100 && out === undefined; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    clock.advance(10)
  }
  return out
}

describe('a script sent again after NOSCRIPT has a command timeout of its own', () => {
  it('RedisCooldownStore: each command answered in 150 ms of a 250 ms bound reads the cooldowns', async () => {
    const clock = new ManualClock()
    const redis = slowFreshRedis(clock, 150)
    const store = new RedisCooldownStore(redis, { commandTimeoutMs: 250, keyPrefix: 'c:', clock })
    const out = await settle(clock, store.remaining('p', ['k1']))
    expect(redis.sent).toEqual(['EVALSHA', 'EVAL'])
    expect(out).toEqual({ value: [0] })
  })

  it('ProviderLimits: the first count on a fresh Redis is made there, not locally', async () => {
    const clock = new ManualClock()
    const redis = slowFreshRedis(clock, 150)
    const warnings: string[] = []
    const limits = new ProviderLimits({
      limits: { p: { rpm: 10 } },
      redis,
      redisCommandTimeoutMs: 250,
      clock,
      logger: { warn: (m) => warnings.push(m), info: () => {} },
    })
    const out = await settle(clock, limits.tryAcquire('p', 1))
    expect(out).toEqual({ value: { admitted: true } })
    expect(redis.sent).toEqual(['EVALSHA', 'EVAL'])
    expect(limits.degraded).toBe(false)
    expect(warnings).toEqual([])
  })

  it('a Redis that does not answer NOSCRIPT in time still fails within one bound', async () => {
    const clock = new ManualClock()
    const redis = slowFreshRedis(clock, 400)
    const store = new RedisCooldownStore(redis, { commandTimeoutMs: 250, keyPrefix: 'c:', clock })
    const started = clock.now()
    const out = await settle(clock, store.remaining('p', ['k1']))
    expect(out && 'error' in out && String(out.error)).toMatch(/did not answer within 250 ms/)
    expect(clock.now() - started).toBeLessThan(300)
    expect(redis.sent).toEqual(['EVALSHA'])
  })
})
