import { once } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type RedisServer, redisAvailable, startRedis } from '../../src/redis/index.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the startRedis tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
}

/** Send one inline command over a raw socket: the reply line, or the socket error code. */
async function send(port: number, command: string): Promise<string> {
  const socket = connect(port, '127.0.0.1')
  socket.setEncoding('utf8')
  try {
    await once(socket, 'connect')
    socket.write(`${command}\r\n`)
    const [data] = (await once(socket, 'data')) as [string]
    return data.trim()
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error)
  } finally {
    socket.destroy()
  }
}

const EPHEMERAL_RANGE = '/proc/sys/net/ipv4/ip_local_port_range'

describe.skipIf(!available)('startRedis', () => {
  let redis: RedisServer | undefined
  afterEach(async () => {
    await redis?.stop()
    redis = undefined
  })

  it('answers PING on 127.0.0.1 as soon as the promise resolves', async () => {
    redis = await startRedis()
    expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`)
    expect(await send(redis.port, 'PING')).toBe('+PONG')
  })

  it('persists nothing: save and appendonly are off', async () => {
    redis = await startRedis()
    expect(await send(redis.port, 'CONFIG GET appendonly')).toContain('no')
    const save = await send(redis.port, 'CONFIG GET save')
    expect(save).toMatch(/^\*2\r\n\$4\r\nsave\r\n\$0$/)
  })

  it('kill() takes the server down; restart() brings it back empty on the same port', async () => {
    redis = await startRedis()
    const port = redis.port
    expect(await send(port, 'SET k v')).toBe('+OK')
    await redis.kill()
    expect(await send(port, 'PING')).toBe('ECONNREFUSED')
    await redis.restart()
    expect(redis.port).toBe(port)
    expect(await send(port, 'PING')).toBe('+PONG')
    expect(await send(port, 'EXISTS k')).toBe(':0')
  })

  // restart() binds the port again after kill(): from the ephemeral range, an
  // outgoing connection or a server on port 0 could take it in between (one
  // did, in CI: "Address already in use").
  it.runIf(existsSync(EPHEMERAL_RANGE))(
    'listens below the kernel’s ephemeral port range, where nothing else is given its port while it is down',
    async () => {
      redis = await startRedis()
      const low = Number(readFileSync(EPHEMERAL_RANGE, 'utf8').split(/\s+/)[0])
      expect(redis.port).toBeLessThan(low)
      expect(redis.port).toBeGreaterThanOrEqual(10_000)
    },
  )

  it('freeze() leaves the connection open and the command unanswered until thaw(); stop() ends a frozen server', async () => {
    redis = await startRedis()
    const socket = connect(redis.port, '127.0.0.1')
    socket.setEncoding('utf8')
    await once(socket, 'connect')
    redis.freeze()
    const replies: string[] = []
    socket.on('data', (data: string) => replies.push(data.trim()))
    socket.write('PING\r\n')
    // Nothing comes back while it is stopped: a second server's answer is the
    // proof that this one had time to answer and did not.
    const other = await startRedis()
    expect(await send(other.port, 'PING')).toBe('+PONG')
    await other.stop()
    expect(replies).toEqual([])
    expect(socket.destroyed).toBe(false)
    redis.thaw()
    await once(socket, 'data')
    expect(replies).toEqual(['+PONG'])
    socket.destroy()
    redis.freeze()
    await redis.stop()
    expect(await send(redis.port, 'PING')).toBe('ECONNREFUSED')
  })

  it('two servers get two ports; stop() is idempotent and frees the port', async () => {
    redis = await startRedis()
    const other = await startRedis()
    expect(other.port).not.toBe(redis.port)
    await other.stop()
    await other.stop()
    expect(await send(other.port, 'PING')).toBe('ECONNREFUSED')
  })

  it('a stop() asked while another is pending waits for the same exit (an app stopping what its run is stopping)', async () => {
    redis = await startRedis()
    const first = redis.stop()
    // Resolved at once, it let an example's signal handler exit with
    // redis-server still running (a zombie once it exited).
    await redis.stop()
    expect(await send(redis.port, 'PING')).toBe('ECONNREFUSED')
    await first
  })
})

describe('startRedis options', () => {
  it('refuses an unknown option before spawning anything, naming the one meant', async () => {
    // Ignored, `readyTimeoutMS` left the 10 s default a slow CI machine needed lifted.
    await expect(startRedis({ readyTimeoutMS: 60_000 } as never)).rejects.toThrow(
      new TypeError(
        'unknown option "readyTimeoutMS" (did you mean readyTimeoutMs?); startRedis() takes binary, readyTimeoutMs',
      ),
    )
  })
})

describe('startRedis readyTimeoutMs', () => {
  // Handed to setTimeout as it was: 0, -1 and NaN failed every try at once,
  // five servers spawned and killed, "redis-server … not ready after NaN ms"
  // blamed on Redis.
  it.each([0, -1, Number.NaN])(
    'refuses %s before spawning anything, a RangeError naming it',
    async (ms) => {
      await expect(startRedis({ readyTimeoutMs: ms })).rejects.toThrow(RangeError)
      await expect(startRedis({ readyTimeoutMs: ms })).rejects.toThrow(
        /^startRedis: readyTimeoutMs must be a number of ms above 0 \(Infinity = none\), got -?(0|1|NaN)$/,
      )
    },
  )

  it('refuses a string, a TypeError naming it', async () => {
    const refused = startRedis({ readyTimeoutMs: '5000' as unknown as number })
    await expect(refused).rejects.toThrow(TypeError)
    await expect(refused).rejects.toThrow(
      /^startRedis: readyTimeoutMs must be a number of ms above 0 .*, got '5000' \(a string\)$/,
    )
  })

  // Overflowed to a 1 ms timer (Node's TimeoutOverflowWarning): the start
  // failed "not ready after Infinity ms", unless a server beat the 1 ms.
  it.skipIf(!available).each([Number.POSITIVE_INFINITY, 3e9])(
    'waits for the server with %s: it starts, and no timer overflows',
    async (ms) => {
      const warnings: string[] = []
      const onWarning = (warning: Error) => warnings.push(warning.name)
      process.on('warning', onWarning)
      let redis: RedisServer | undefined
      try {
        redis = await startRedis({ readyTimeoutMs: ms })
        expect(await send(redis.port, 'PING')).toBe('+PONG')
        // A process warning is emitted on a later tick.
        await new Promise((resolve) => setImmediate(resolve))
        expect(warnings).not.toContain('TimeoutOverflowWarning')
      } finally {
        process.off('warning', onWarning)
        await redis?.stop()
      }
    },
  )
})

describe('redisAvailable', () => {
  it('is false for a binary that does not exist, outside CI', () => {
    vi.stubEnv('CI', '')
    try {
      expect(redisAvailable('no-such-redis-server-binary')).toBe(false)
      expect(redisAvailable('/nonexistent/redis-server')).toBe(false)
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('throws under CI, so a Redis suite can never pass there by skipping', () => {
    vi.stubEnv('CI', 'true')
    try {
      expect(() => redisAvailable('no-such-redis-server-binary')).toThrow(
        /CI must run the Redis tests/,
      )
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('finds an executable on PATH', () => {
    expect(redisAvailable('node')).toBe(true)
  })
})

// A test that fails while restart() is under way leaves its cleanup to call
// stop() (or kill()) mid-restart: the server restart() brings up must not
// outlive that stop.
describe.skipIf(!available)('stop() or kill() while restart() is under way', () => {
  let redis: RedisServer | undefined
  afterEach(async () => {
    await redis?.stop()
    redis = undefined
  })

  it('stop() called at once after restart(): no server left once both settle', async () => {
    redis = await startRedis()
    const restarting = redis.restart()
    await redis.stop()
    await restarting
    expect(await send(redis.port, 'PING')).toBe('ECONNREFUSED')
  })

  it('stop() while the restart spawns (the old server already killed)', async () => {
    redis = await startRedis()
    await redis.kill()
    const restarting = redis.restart()
    await redis.stop()
    expect(await send(redis.port, 'PING')).toBe('ECONNREFUSED')
    await restarting
    expect(await send(redis.port, 'PING')).toBe('ECONNREFUSED')
  })

  it('kill() while the restart spawns', async () => {
    redis = await startRedis()
    await redis.kill()
    const restarting = redis.restart()
    await redis.kill()
    await restarting
    expect(await send(redis.port, 'PING')).toBe('ECONNREFUSED')
  })

  it('a restart() with no stop meanwhile still brings the server back', async () => {
    redis = await startRedis()
    await redis.kill()
    await redis.restart()
    expect(await send(redis.port, 'PING')).toBe('+PONG')
  })
})
