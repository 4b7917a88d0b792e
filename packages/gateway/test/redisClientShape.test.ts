import type { AddressInfo } from 'node:net'
import express from 'express'
import type { Redis } from 'ioredis'
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import {
  createGateway,
  type GatewayOptions,
  type GatewayRedisClient,
  type GatewayRouter,
  type StartGatewayOptions,
} from '../src/index.js'

const config = {
  providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
  models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
}

/**
 * `createGateway({ redis })` takes a client by its shape — `status`, `eval`,
 * `evalsha` — not as the class of the gateway's own ioredis: an app's
 * ioredis 5 client was refused by the compiler (TS2740, hundreds of members
 * "missing") though it works. A structural object is all it needs.
 */
describe('the redis option is typed by what the gateway uses', () => {
  let gateway: GatewayRouter | undefined
  let server: ReturnType<ReturnType<typeof express>['listen']> | undefined
  afterEach(async () => {
    await gateway?.close()
    server?.close()
  })

  it('an ioredis client fits, and so does anything of its shape', () => {
    expectTypeOf<Redis>().toExtend<GatewayRedisClient>()
    expectTypeOf<GatewayOptions['redis']>().toEqualTypeOf<GatewayRedisClient | undefined>()
    expectTypeOf<StartGatewayOptions['redis']>().toEqualTypeOf<GatewayRedisClient | undefined>()
    const minimal = {
      status: 'ready',
      eval: async (_script: string, _numKeys: number) => 1,
      evalsha: async (_sha: string, _numKeys: number) => 1,
    }
    expectTypeOf(minimal).toExtend<GatewayRedisClient>()
    // Without the scripts' commands it is no Redis client.
    expectTypeOf<{ status: string }>().not.toExtend<GatewayRedisClient>()
  })

  async function readyz(redis: GatewayRedisClient): Promise<unknown> {
    gateway = createGateway(config, { redis, logger: () => {} })
    server = express().use(gateway).listen(0, '127.0.0.1')
    await new Promise((resolve) => server!.once('listening', resolve))
    const { port } = server.address() as AddressInfo
    return (await fetch(`http://127.0.0.1:${port}/readyz`)).json()
  }

  it('/readyz reads a structural client as it reads ioredis: its status, then a probe through its eval', async () => {
    const probes: string[] = []
    const answering: GatewayRedisClient = {
      status: 'ready',
      eval: async (script: string) => {
        probes.push(script)
        return 1
      },
      evalsha: async () => 1,
    }
    expect(await readyz(answering)).toEqual({ status: 'ready', redis: 'shared' })
    expect(probes).toHaveLength(1)
  })

  it('one whose status is not ready reads unreachable, with no command sent', async () => {
    const sent: string[] = []
    const closed: GatewayRedisClient = {
      status: 'end',
      eval: async (script: string) => {
        sent.push(script)
        return 1
      },
      evalsha: async (sha: string) => {
        sent.push(sha)
        return 1
      },
    }
    expect(await readyz(closed)).toEqual({ status: 'ready', redis: 'unreachable' })
    expect(sent).toEqual([])
  })
})
