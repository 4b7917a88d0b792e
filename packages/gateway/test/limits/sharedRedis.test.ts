import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { spawnWorker, type Worker } from './support/spawnWorker.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the shared-Redis gateway limit tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
}

interface Sent {
  id: string
  status: number
  degraded: boolean | undefined
}

describe.skipIf(!available)('two gateway processes sharing one real Redis', () => {
  let redis: RedisServer
  let upstream: Server
  let upstreamUrl: string
  const received: string[] = []
  const workers: Worker[] = []

  beforeAll(async () => {
    redis = await startRedis()
    upstream = createServer((req, res) => {
      received.push(new URL(req.url ?? '/', 'http://x').searchParams.get('id') ?? '?')
      res.end('ok')
    })
    upstream.listen(0, '127.0.0.1')
    await once(upstream, 'listening')
    const address = upstream.address()
    upstreamUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`
  })
  afterAll(async () => {
    upstream.closeAllConnections()
    await new Promise<void>((resolve) => upstream.close(() => resolve()))
    await redis?.stop()
  })
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()))
    received.length = 0
  })

  async function startTwo(env: Record<string, string>): Promise<[Worker, Worker]> {
    const common = { REDIS_URL: redis.url, UPSTREAM_URL: upstreamUrl, ...env }
    const pair = await Promise.all([spawnWorker(common), spawnWorker(common)])
    workers.push(...pair)
    return pair
  }

  /** Send `count` requests, alternating between the workers, 16 at a time. */
  async function hammer(
    pair: Worker[],
    count: number,
    tag: string,
    provider = 'acme',
    onAnswer: (answered: number) => void = () => {},
  ) {
    const sent: Sent[] = []
    let next = 0
    const lane = async () => {
      while (next < count) {
        const i = next++
        const id = `${tag}-${i}`
        const port = pair[i % pair.length]?.port
        const res = await fetch(`http://127.0.0.1:${port}/?id=${id}&provider=${provider}`)
        const body = (await res.json().catch(() => ({}))) as { degraded?: boolean }
        sent.push({ id, status: res.status, degraded: body.degraded })
        onAnswer(sent.length)
      }
    }
    await Promise.all(Array.from({ length: 16 }, lane))
    return sent
  }

  it('enforce one RPM limit between them: upstream never gets more than the limit in the window', async () => {
    const pair = await startTwo({ RPM: '25', KEY_PREFIX: `rpm-${Date.now()}` })
    const sent = await hammer(pair, 120, 'a')
    const ok = sent.filter((s) => s.status === 200)
    expect(received).toHaveLength(25)
    expect(ok).toHaveLength(25)
    expect(sent.filter((s) => s.status === 429)).toHaveLength(95)
    expect(new Set(received)).toEqual(new Set(ok.map((s) => s.id)))
    // Both processes admitted some: the limit is shared, not split by luck of routing.
    const byWorker = [0, 1].map(
      (w) => ok.filter((s) => Number(s.id.split('-')[1]) % 2 === w).length,
    )
    expect(byWorker.every((n) => n > 0)).toBe(true)
    // Another provider's limit is untouched by acme's.
    const other = await hammer(pair, 10, 'o', 'other')
    expect(other.every((s) => s.status === 200)).toBe(true)
  })

  it('keep serving on a local limiter while Redis is down, say so once, and share again after it returns; no request lost or doubled', async () => {
    const prefix = `kill-${Date.now()}`
    const pair = await startTwo({ RPM: '40', INSTANCES: '2', KEY_PREFIX: prefix })
    const inspector = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 })
    inspector.on('error', () => {})
    try {
      // Phase 1: Redis up, counts shared.
      const before = await hammer(pair, 10, 'up')
      expect(before.every((s) => s.status === 200 && s.degraded === false)).toBe(true)
      await inspector.connect()
      expect(await inspector.get(`${prefix}:rpm:acme`)).toBe('10')
      inspector.disconnect()

      // Phase 2: Redis killed while requests are in flight. Each instance goes on with
      // its share (40 / 2 = 20) on a local limiter.
      let killed: Promise<void> | undefined
      const down = await hammer(pair, 80, 'down', 'acme', (answered) => {
        if (answered === 6) killed = redis.kill()
      })
      await killed
      expect(down.every((s) => s.status === 200 || s.status === 429)).toBe(true)
      console.info(
        `redis killed after 6 of 80 answers: ${down.filter((s) => s.status === 200).length} admitted, ` +
          `${down.filter((s) => s.status === 429).length} refused, logs: ${pair.map((w) => w.logs.length).join('/')}`,
      )
      // At most the 30 left in Redis before the kill, plus 20 per instance locally.
      expect(down.filter((s) => s.status === 200).length).toBeLessThanOrEqual(30 + 40)
      // With Redis still down, both local shares are spent: the next requests are refused locally.
      const stillDown = await hammer(pair, 10, 'still-down')
      expect(stillDown.every((s) => s.status === 429 && s.degraded === true)).toBe(true)
      for (const w of pair) {
        expect(w.logs.filter((l) => /Redis unavailable/.test(l))).toHaveLength(1)
      }

      // Phase 3: Redis back (empty). The instances reconnect and count in Redis again.
      const ready = pair.map((w) => w.nextRedisReady())
      await redis.restart()
      await Promise.all(ready)
      const after = await hammer(pair, 10, 'back')
      expect(after.every((s) => s.status === 200 && s.degraded === false)).toBe(true)
      await inspector.connect()
      expect(await inspector.get(`${prefix}:rpm:acme`)).toBe('10')
      for (const w of pair) {
        expect(w.logs.filter((l) => /Redis unavailable/.test(l))).toHaveLength(1)
        expect(w.logs.filter((l) => /Redis is back/.test(l))).toHaveLength(1)
      }

      // Every request got one answer; every admitted one reached upstream exactly once.
      const all = [...before, ...down, ...stillDown, ...after]
      expect(all).toHaveLength(110)
      const admitted = all.filter((s) => s.status === 200).map((s) => s.id)
      expect([...received].sort()).toEqual([...admitted].sort())
      expect(new Set(received).size).toBe(received.length)
    } finally {
      inspector.disconnect()
    }
  })
})
