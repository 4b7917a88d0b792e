import { once } from 'node:events'
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { startGateway } from '../../src/index.js'

/**
 * `startGateway` as an operator's own code calls it: a bad port or host is
 * one clear error, and nothing the gateway opens (its Redis client above
 * all, which reconnects forever) is left running to keep the process alive.
 */
describe('startGateway refuses bad listen options before opening anything', () => {
  let redis: Server | undefined
  const sockets = new Set<Socket>()
  afterEach(async () => {
    for (const socket of sockets) socket.destroy()
    sockets.clear()
    if (redis) await new Promise((resolve) => redis?.close(resolve))
    redis = undefined
  })

  /** A TCP listener standing in for Redis: it accepts, never answers, and counts who connects. */
  async function silentRedis(): Promise<{ url: string; connections: () => number }> {
    let accepted = 0
    redis = createServer((socket) => {
      accepted++
      sockets.add(socket)
      socket.on('error', () => {})
    })
    redis.listen(0, '127.0.0.1')
    await once(redis, 'listening')
    const { port } = redis.address() as AddressInfo
    return { url: `redis://127.0.0.1:${port}`, connections: () => accepted }
  }

  const config = (redisUrl: string) => ({
    providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
    models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
    redis: { url: redisUrl },
  })

  it('a port outside 0–65535, a fraction, NaN or a string: GATEWAY_OPTION_INVALID, and no Redis connection made', async () => {
    // Before: the gateway was made, connected to Redis, waited for it, and
    // only then did listen() throw Node's ERR_SOCKET_BAD_PORT — with that
    // Redis client left reconnecting for ever.
    const fake = await silentRedis()
    for (const port of [70_000, -1, 1.5, Number.NaN, '8080']) {
      const error = await startGateway({
        config: config(fake.url),
        port: port as number,
        logger: () => {},
      }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(Error)
      expect((error as Error).message).toMatch(
        /^startGateway: port must be a whole number from 0 to 65535, got /,
      )
      expect((error as { code?: unknown }).code).toBe('GATEWAY_OPTION_INVALID')
    }
    expect(fake.connections()).toBe(0)
  })

  it('an empty or non-string host: GATEWAY_OPTION_INVALID, and no Redis connection made', async () => {
    const fake = await silentRedis()
    for (const host of ['', 127001]) {
      const error = await startGateway({
        config: config(fake.url),
        port: 0,
        host: host as string,
        logger: () => {},
      }).catch((e: unknown) => e)
      expect((error as Error).message).toMatch(/^startGateway: host must be a non-empty string/)
      expect((error as { code?: unknown }).code).toBe('GATEWAY_OPTION_INVALID')
    }
    expect(fake.connections()).toBe(0)
  })
})
