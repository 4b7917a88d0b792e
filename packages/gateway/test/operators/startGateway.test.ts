import { once } from 'node:events'
import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { startGateway } from '../../src/index.js'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'
import { useSilentRedis } from '../support/silentRedis.js'

/**
 * `startGateway` as an operator's own code calls it: a bad port or host is
 * one clear error, and nothing the gateway opens (its Redis client above
 * all, which reconnects forever) is left running to keep the process alive.
 */
describe('startGateway refuses bad listen options before opening anything', () => {
  const silentRedis = useSilentRedis()

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

/**
 * An `Expect` other than `100-continue` (none other is defined): RFC 9110
 * §10.1.1 lets a server answer 417 or ignore it. Node answered 417 itself,
 * ahead of the router: an empty body, no `x-request-id`, no log line, not
 * counted. The gateway ignores it and serves the request as any other.
 */
describe('a request with an unknown Expect under startGateway', () => {
  let harness: Harness | undefined
  let closeFake: (() => Promise<void>) | undefined
  afterEach(async () => {
    await harness?.close()
    await closeFake?.()
    harness = undefined
  })

  /** One raw request (undici refuses to send `Expect`); resolves the whole answer. */
  async function raw(url: string, head: string, body = ''): Promise<string> {
    const socket = connect(Number(new URL(url).port), '127.0.0.1')
    socket.setEncoding('utf8')
    let text = ''
    socket.on('data', (chunk: string) => {
      text += chunk
    })
    socket.write(`${head}Host: x\r\nConnection: close\r\n\r\n${body}`)
    await once(socket, 'end')
    socket.destroy()
    return text
  }

  it('is served: its answer, x-request-id, its request line and its count', async () => {
    const { fake, entry } = await fakeProvider('openai', ['sk-expect-0000001'])
    closeFake = () => fake.close()
    harness = await startHarness({ providers: { p: entry }, models: { m: fallback(['p', 'x']) } })
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
    const answer = await raw(
      harness.url,
      `POST /v1/chat/completions HTTP/1.1\r\nExpect: something-else\r\nx-request-id: rid-expect\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`,
      body,
    )
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK')
    expect(answer).toMatch(/\r\nx-request-id: rid-expect\r\n/i)
    expect(answer).toContain('"chat.completion"')
    expect(fake.requests).toHaveLength(1)
    // A path it does not serve: the gateway's own 404, as without the header.
    const missing = await raw(harness.url, 'GET /v1/nowhere HTTP/1.1\r\nExpect: foo\r\n')
    expect(missing.split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found')
    expect(missing).toContain('"code":"not_found"')
    expect(harness.logs.filter((l) => l.event === 'request')).toEqual([
      expect.objectContaining({ requestId: 'rid-expect', status: 200 }),
      expect.objectContaining({ path: '/v1/nowhere', status: 404, error: 'not_found' }),
    ])
    const page = await (await fetch(`${harness.url}/metrics`)).text()
    expect(page).toMatch(/hourglass_gateway_requests_total\{[^}]*status_class="2xx"[^}]*\} 1\b/)
  })
})
