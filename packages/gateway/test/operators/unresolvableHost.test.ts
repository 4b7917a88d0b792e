import { once } from 'node:events'
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { startGateway } from '../../src/index.js'

// The resolver's answer for a name that does not exist, without asking a
// DNS server (none may be reachable where the tests run): every other name
// is looked up as usual.
vi.mock('node:dns/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:dns/promises')>()
  const lookup = (host: string, ...rest: unknown[]) =>
    host === 'no-such-host.invalid'
      ? Promise.reject(
          Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }),
        )
      : (actual.lookup as (...args: unknown[]) => Promise<unknown>)(host, ...rest)
  return { ...actual, lookup, default: { ...actual, lookup } }
})

/**
 * A `host` that names nothing (a name the resolver does not know; dotted
 * numbers that are no IPv4 address, `256.1.1.1`, `10.0.0`) is the gateway's
 * option error naming it, before Redis is dialled — as an empty one is. It
 * was Node's raw `getaddrinfo ENOTFOUND` (or `EADDRNOTAVAIL … 10.0.0.0`)
 * from listen(), thrown only after the gateway had connected to Redis and
 * waited for it.
 */
describe('startGateway with a host that does not resolve', () => {
  let redis: Server | undefined
  const sockets = new Set<Socket>()
  afterEach(async () => {
    for (const socket of sockets) socket.destroy()
    sockets.clear()
    if (redis) await new Promise((resolve) => redis?.close(resolve))
    redis = undefined
  })

  it.each(['256.1.1.1', '10.0.0', 'no-such-host.invalid'])(
    '%s: GATEWAY_OPTION_INVALID naming it, no Redis connection made',
    async (host) => {
      let accepted = 0
      redis = createServer((socket) => {
        accepted++
        sockets.add(socket)
        socket.on('error', () => {})
      })
      redis.listen(0, '127.0.0.1')
      await once(redis, 'listening')
      const { port } = redis.address() as AddressInfo
      const error = await startGateway({
        config: {
          providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
          models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
          redis: { url: `redis://127.0.0.1:${port}` },
        },
        port: 0,
        host,
        logger: () => {},
        drainOnSignals: false,
      }).catch((e: unknown) => e)
      expect((error as Error).message).toBe(
        `startGateway: host must be an address or a host name that resolves, got '${host}' (a string)`,
      )
      expect((error as { code?: unknown }).code).toBe('GATEWAY_OPTION_INVALID')
      expect(accepted).toBe(0)
    },
  )

  it('a name that resolves (localhost) is listened on', async () => {
    const running = await startGateway({
      config: {
        providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
        models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
      },
      port: 0,
      host: 'localhost',
      logger: () => {},
      drainOnSignals: false,
    })
    await running.close()
    expect(running.url).toMatch(/^http:\/\/(127\.0\.0\.1|\[::1\]):\d+$/)
  })
})
