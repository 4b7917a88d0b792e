import { Agent, request as httpRequest } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { startGateway } from '../../src/index.js'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/** One GET on `agent`, its status and Keep-Alive header. */
function get(
  url: string,
  agent: Agent,
): Promise<{ status: number; keepAlive: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/healthz`, { agent }, (res) => {
      res.resume()
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          keepAlive: res.headers['keep-alive'] as string | undefined,
        }),
      )
    })
    req.on('error', reject)
    req.end()
  })
}

// Behind a load balancer whose idle timeout is longer than the server's,
// the balancer sends a request on a connection the server has just closed:
// a reset. Node's default keeps idle connections 5 s; ALB keeps them 60 s.
describe('startGateway keeps idle connections longer than a load balancer does', () => {
  let harness: Harness | undefined
  let agent: Agent | undefined
  afterEach(async () => {
    agent?.destroy()
    agent = undefined
    await harness?.close()
    harness = undefined
  })

  async function start(options: { keepAliveTimeoutMs?: number } = {}) {
    const provider = await fakeProvider('openai', ['k'])
    harness = await startHarness(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      options,
    )
    await provider.fake.close()
    agent = new Agent({ keepAlive: true, maxSockets: 1 })
    return harness
  }

  it('by default 65 s, said in the Keep-Alive header', async () => {
    const { url } = await start()
    const answer = await get(url, agent as Agent)
    expect(answer.status).toBe(200)
    // Before: `timeout=5` (Node's default keepAliveTimeout).
    expect(answer.keepAlive).toBe('timeout=65')
  })

  it('as long as keepAliveTimeoutMs says', async () => {
    const { url } = await start({ keepAliveTimeoutMs: 120_000 })
    expect((await get(url, agent as Agent)).keepAlive).toBe('timeout=120')
  })

  it('close() still closes an idle kept-alive connection at once, not after the keep-alive time', async () => {
    const { url, running } = await start({ keepAliveTimeoutMs: 600_000 })
    await get(url, agent as Agent)
    const sockets = Object.values((agent as Agent).freeSockets).flat()
    expect(sockets).toHaveLength(1)
    const closed = new Promise<void>((resolve) => sockets[0]?.once('close', () => resolve()))
    // Resolves while the idle connection would otherwise stay 10 minutes.
    const report = await running.close()
    expect(report.cutOff).toBe(0)
    await closed
    harness = undefined
  })

  // Under a second, Node's `Keep-Alive: timeout=0` told clients not to reuse a connection it kept open.
  it('refuses a keepAliveTimeoutMs that is not a whole number of ms from 1000 to a day', async () => {
    for (const bad of [0, -1, 1.5, 500, 999, Number.NaN, '65000', 86_400_001]) {
      const error = await startGateway({
        config: {
          providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
          models: { m: fallback(['p', 'gpt']) },
        },
        port: 0,
        logger: () => {},
        keepAliveTimeoutMs: bad as number,
      }).catch((e: unknown) => e)
      expect((error as Error).message).toMatch(/^startGateway: keepAliveTimeoutMs must be /)
      expect((error as { code?: unknown }).code).toBe('GATEWAY_OPTION_INVALID')
    }
  })
})
