import { type AddressInfo, createServer, type Server, type Socket } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { closedPort } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { until } from '../../../test/support/until.js'
import { createGateway, type GatewayRouter } from '../src/index.js'

/**
 * The one warning the gateway gives when its Redis cannot be used at start.
 * A Redis that accepted the connection and never answered, with a large
 * `redis.commandTimeoutMs`, used to get no word at all (ioredis raises no
 * error before two command timeouts: 2 min at 60 s); and an error with no
 * `code` was said as "(error)". The start-up bound runs on the gateway's
 * clock, so it is moved here, not waited for.
 */

type LogRecord = { level: string; event: string; msg?: string; redis?: string }

/**
 * A Redis-shaped listener on loopback: it reads every command and answers each
 * with `answer` (a RESP line), or never when `answer` is undefined.
 */
async function fakeRedis(answer?: string, port = 0) {
  const sockets = new Set<Socket>()
  let received = ''
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.once('close', () => sockets.delete(socket))
    let pending = ''
    socket.on('data', (data) => {
      received += data.toString('latin1')
      if (answer === undefined) return
      pending += data.toString('latin1')
      // Each command is an array: `*<n>\r\n` then its bulk strings.
      const lines = pending.split('\r\n')
      pending = lines.pop() ?? ''
      for (const line of lines) if (line.startsWith('*')) socket.write(`${answer}\r\n`)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    received: () => received,
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe('Redis at start: one warning, saying why', () => {
  let gateway: GatewayRouter | undefined
  let redis: Awaited<ReturnType<typeof fakeRedis>> | undefined
  afterEach(async () => {
    await gateway?.close()
    await redis?.close()
    gateway = undefined
    redis = undefined
  })

  function start(port: number, commandTimeoutMs: number, clock?: ManualClock) {
    const logs: LogRecord[] = []
    gateway = createGateway(
      {
        providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
        models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
        redis: { url: `redis://:hunter2-redis-pass@127.0.0.1:${port}`, commandTimeoutMs },
      },
      {
        logger: (record) => logs.push(record as unknown as LogRecord),
        ...(clock === undefined ? {} : { clock }),
      },
    )
    return () => logs.filter((l) => l.event === 'redis')
  }

  it('a Redis that connects and never answers (commandTimeoutMs 60000): warned once after 2 s, not 2 min', async () => {
    redis = await fakeRedis()
    const clock = new ManualClock(1_000_000)
    const redisLogs = start(redis.port, 60_000, clock)
    // Connected, its first command sent (and never answered).
    await until(() => redis!.received().includes('*'), 2000, 'the first command')
    clock.advance(1999)
    expect(redisLogs()).toEqual([])
    clock.advance(1)
    expect(redisLogs()).toHaveLength(1)
    expect(redisLogs()[0]).toMatchObject({ level: 'warn', redis: 'unreachable' })
    expect(redisLogs()[0]?.msg).toMatch(
      new RegExp(
        `^Redis at 127\\.0\\.0\\.1:${redis.port} is unreachable \\(connected, no answer within 2000 ms\\): limits and cooldowns are counted on this instance alone`,
      ),
    )
    expect(gateway!.redisState()).toBe('unreachable')
    // Said once: however long the silence lasts.
    clock.advance(600_000)
    expect(redisLogs()).toHaveLength(1)
    expect(JSON.stringify(redisLogs())).not.toContain('hunter2-redis-pass')
  })

  it('an error without a code is said by its message, not "(error)"', async () => {
    // A Redis refusing the URL's password: ioredis's AUTH fails with a ReplyError, which has no code.
    redis = await fakeRedis('-WRONGPASS invalid username-password pair or user is disabled.')
    const redisLogs = start(redis.port, 250)
    await until(() => redisLogs().length > 0, 900, 'the warning')
    expect(redisLogs()).toHaveLength(1)
    expect(redisLogs()[0]?.msg).toMatch(
      new RegExp(
        `^Redis at 127\\.0\\.0\\.1:${redis.port} is unreachable \\(WRONGPASS invalid username-password pair or user is disabled\\.\\): `,
      ),
    )
  })

  it('a Redis that answers at once gets no warning, even once the start-up bound has passed', async () => {
    redis = await fakeRedis('+OK')
    const clock = new ManualClock(1_000_000)
    const redisLogs = start(redis.port, 60_000, clock)
    expect(await gateway!.ready(900)).toBe(true)
    clock.advance(600_000)
    expect(redisLogs()).toEqual([])
  })

  it('a Redis that refuses the first connections and comes up within the bound: ready() waits for it, not false at the first refusal', async () => {
    const port = await closedPort()
    const redisLogs = start(port, 250)
    const ready = gateway!.ready(5000)
    // The first connection was refused (ECONNREFUSED, warned); then Redis starts.
    await until(() => redisLogs().length > 0, 2000, 'the warning')
    expect(redisLogs()[0]?.msg).toMatch(/is unreachable \(ECONNREFUSED\)/)
    redis = await fakeRedis('+OK', port)
    expect(await ready).toBe(true)
    expect(gateway!.redisState()).not.toBe('unreachable')
  })
})
