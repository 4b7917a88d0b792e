import type { IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type FakeProvider, reply } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createGateway,
  type DrainReport,
  type GatewayRedisClient,
  type GatewayRouter,
  type LogRecord,
} from '../../src/index.js'
import { fakeProvider, fallback, startHarness } from '../support/harness.js'

/**
 * The gateway mounted in an app whose server keeps listening, so what a
 * client sees *during* the drain is observable: `close()` drains the router.
 */
describe('graceful shutdown', () => {
  let fake: FakeProvider | undefined
  let stopServer: (() => Promise<void>) | undefined
  afterEach(async () => {
    await stopServer?.()
    await fake?.close()
    fake = undefined
    stopServer = undefined
  })

  async function serve(drainTimeoutMs: number) {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    const logs: LogRecord[] = []
    const gateway: GatewayRouter = createGateway(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      { logger: (r) => logs.push(r), drainTimeoutMs },
    )
    const app = express().use(gateway)
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    // Called for each request once the app (so the gateway's tracker) has taken it.
    const arrived: { onArrival?: (path: string) => void } = {}
    server.on('request', (req: IncomingMessage) => arrived.onArrival?.(req.url ?? ''))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    stopServer = async () => {
      await gateway.close()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
    const post = (body: Record<string, unknown> = {}, init: RequestInit = {}) =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        ...init,
        headers: { 'content-type': 'application/json', ...init.headers },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], ...body }),
      })
    return { fake: provider.fake, gateway, logs, url, post, arrived }
  }

  it('lets requests in flight finish, refuses new ones with 503 and says drained N', async () => {
    const { fake, gateway, logs, url, post } = await serve(5000)
    fake.enqueue(reply.text('finished during the drain', { latencyMs: 400 }))
    const inFlight = post()
    await fake.waitForRequests(1)
    const closing = gateway.close()
    // While draining: not ready, still alive, API refused with a retryable 503.
    const ready = await fetch(`${url}/readyz`)
    expect(ready.status).toBe(503)
    expect(await ready.json()).toEqual({ status: 'draining', redis: 'none' })
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
    const refused = await post()
    expect(refused.status).toBe(503)
    expect(refused.headers.get('x-should-retry')).toBe('true')
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('shutting_down')

    const answer = await inFlight
    expect(answer.status).toBe(200)
    expect(
      ((await answer.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message
        .content,
    ).toBe('finished during the drain')
    expect(await closing).toEqual({ inFlight: 1, drained: 1, cutOff: 0, ms: expect.any(Number) })
    const shutdown = logs.filter((l) => l.event === 'shutdown')
    expect(shutdown).toHaveLength(1)
    expect(shutdown[0]).toMatchObject({ level: 'info', inFlight: 1, drained: 1, cutOff: 0 })
    expect(shutdown[0]?.msg).toMatch(/^shutdown: drained 1 in \d+ ms$/)
    expect(fake.requests).toHaveLength(1)
  })

  it('a request refused during the drain is logged and counted like any other: its id, 503, shutting_down', async () => {
    const { fake, gateway, logs, url, post } = await serve(10_000)
    // One request in flight holds the drain open until the test lets it go.
    fake.enqueue(reply.hang())
    const leaving = new AbortController()
    const inFlight = post({}, { signal: leaving.signal }).catch(() => 'left')
    await fake.waitForRequests(1)
    const closing = gateway.close()
    // Said as the drain begins (a stop signal's arrival), not only at its end.
    expect(logs.filter((l) => l.event === 'draining')).toEqual([
      expect.objectContaining({
        level: 'info',
        drainTimeoutMs: 10_000,
        msg: 'draining: requests in flight get up to 10000 ms to finish; new API requests get 503 shutting_down',
      }),
    ])
    const refused = await post({}, { headers: { 'x-request-id': 'refused-in-drain' } })
    expect(refused.status).toBe(503)
    expect(refused.headers.get('x-request-id')).toBe('refused-in-drain')
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('shutting_down')

    const line = logs.find((l) => l.event === 'request' && l.requestId === 'refused-in-drain')
    expect(line).toMatchObject({
      level: 'warn',
      path: '/v1/chat/completions',
      status: 503,
      error: 'shutting_down',
    })
    expect(line?.['latencyMs']).toEqual(expect.any(Number))
    // Counted when its response closes, read while the drain still runs (`/metrics` is not refused).
    await expect
      .poll(async () => (await fetch(`${url}/metrics`)).text())
      .toMatch(/^hourglass_gateway_errors_total\{kind="shutting_down"\} 1$/m)
    const page = await (await fetch(`${url}/metrics`)).text()
    expect(page).toMatch(/^hourglass_gateway_requests_total\{status_class="5xx"\} 1$/m)
    expect(page).toMatch(
      /^hourglass_gateway_request_duration_seconds_count\{status_class="5xx"\} 1$/m,
    )

    leaving.abort()
    expect(await inFlight).toBe('left')
    await closing
    // The refusal is one request line; the one in flight is the other (the client left: 499).
    await expect
      .poll(() => logs.filter((l) => l.event === 'request').map((l) => [l.status, l['error']]))
      .toEqual([
        [503, 'shutting_down'],
        [499, 'client_closed'],
      ])
    expect(logs.find((l) => l.event === 'shutdown')).toMatchObject({ inFlight: 1, cutOff: 0 })
  })

  it('cancels what is still running at the drain timeout: 503 to the client, upstream stopped, N cut off', async () => {
    const { fake, gateway, logs, post } = await serve(200)
    fake.enqueue(reply.text('never', { latencyMs: 10_000 }))
    const inFlight = post()
    await fake.waitForRequests(1)
    const report = await gateway.close()
    // What the log line says, resolved for the caller to act on (the CLI's exit code).
    expect(report).toEqual({ inFlight: 1, drained: 0, cutOff: 1, ms: expect.any(Number) })
    expect(await gateway.close()).toBe(report)
    const answer = await inFlight
    expect(answer.status).toBe(503)
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('shutting_down')
    expect(fake.requests[0]?.outcome).toBe('client-closed')
    const shutdown = logs.find((l) => l.event === 'shutdown')
    expect(shutdown).toMatchObject({ level: 'warn', inFlight: 1, drained: 0, cutOff: 1 })
    expect(shutdown?.msg).toMatch(/^shutdown: drained 0 in \d+ ms, 1 cut off$/)
    expect(logs.find((l) => l.event === 'request')).toMatchObject({
      status: 503,
      error: 'shutting_down',
    })
  })

  it('a stream cut by the drain ends with a shutting_down error event', async () => {
    const { fake, gateway, post } = await serve(150)
    fake.enqueue(reply.text('a b c d e f g h i j k l m n o p', { tokenDelayMs: 100 }))
    const res = await post({ stream: true })
    expect(res.status).toBe(200)
    const text = res.text()
    await gateway.close()
    const body = await text
    expect(body).toContain('"code":"shutting_down"')
    expect(body).not.toContain('[DONE]')
  })

  it("startGateway's close() resolves the drain's report: a request cut off is counted for the caller", async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    const harness = await startHarness(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      { drainTimeoutMs: 0 },
    )
    provider.fake.enqueue(reply.hang())
    const inFlight = harness.client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .catch((error: unknown) => (error as { status?: number }).status)
    await provider.fake.waitForRequests(1)
    const report = await harness.running.close()
    expect(report).toEqual({ inFlight: 1, drained: 0, cutOff: 1, ms: expect.any(Number) })
    expect(await inFlight).toBe(503)
  })
  it('a /readyz in flight at close() (Redis slow to answer) neither holds the drain nor is counted in it', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    // Connected, its answer held until the test gives it: a slow Redis.
    let answerProbe: (() => void) | undefined
    const slow: GatewayRedisClient = {
      status: 'ready',
      eval: () =>
        new Promise((resolve) => {
          answerProbe = () => resolve(1)
        }),
      evalsha: () => new Promise(() => {}),
    }
    const logs: LogRecord[] = []
    const gateway = createGateway(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      { logger: (r) => logs.push(r), redis: slow },
    )
    const server = express().use(gateway).listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    stopServer = async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
    const probe = fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`)
    await expect.poll(() => answerProbe).toBeDefined()
    // Resolved while the probe still waits on Redis: no API request was in flight.
    const report = await gateway.close()
    expect(report).toEqual({ inFlight: 0, drained: 0, cutOff: 0, ms: expect.any(Number) })
    expect(logs.find((l) => l.event === 'shutdown')?.msg).toMatch(/^shutdown: drained 0 in \d+ ms$/)
    // The prober still gets its answer, read after the round trip: draining.
    answerProbe?.()
    const ready = await probe
    expect(ready.status).toBe(503)
    expect(((await ready.json()) as { status: string }).status).toBe('draining')
  })

  it('the report and the shutdown line count API requests only, not a /metrics scrape in flight with them', async () => {
    const { fake, gateway, logs, url, post, arrived } = await serve(10_000)
    // One API request in flight, until its client leaves.
    fake.enqueue(reply.hang())
    const leaving = new AbortController()
    const inFlight = post({}, { signal: leaving.signal }).catch(() => 'left')
    await fake.waitForRequests(1)
    // The drain begins as a scrape is taken, before its page (collected
    // asynchronously) is written: both are in flight.
    let closing: Promise<DrainReport> | undefined
    arrived.onArrival = (path) => {
      if (path === '/metrics') closing ??= gateway.close()
    }
    const scrape = fetch(`${url}/metrics`).then(
      async (res) => {
        await res.arrayBuffer()
        return 'answered'
      },
      () => 'closed',
    )
    await expect.poll(() => closing !== undefined).toBe(true)
    leaving.abort()
    expect(await inFlight).toBe('left')
    expect(await closing).toEqual({ inFlight: 1, drained: 1, cutOff: 0, ms: expect.any(Number) })
    expect(logs.find((l) => l.event === 'shutdown')?.msg).toMatch(/^shutdown: drained 1 in \d+ ms$/)
    expect(['answered', 'closed']).toContain(await scrape)
  })

  it('/readyz during the drain answers 503 at once, without waiting on a Redis that does not answer', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    let probes = 0
    // Connected, every command unanswered: a SIGSTOPped redis-server.
    const frozen: GatewayRedisClient = {
      status: 'ready',
      eval: () => {
        probes++
        return new Promise(() => {})
      },
      evalsha: () => new Promise(() => {}),
    }
    const gateway = createGateway(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      { logger: () => {}, redis: frozen },
    )
    const server = express().use(gateway).listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    stopServer = async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
    await gateway.close()
    const ready = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`)
    expect(ready.status).toBe(503)
    // What the last check established (none yet: the client is connected, no command failed).
    expect(await ready.json()).toEqual({ status: 'draining', redis: 'shared' })
    // Not asked: its answer could not change the 503, and waiting on it held
    // the prober's answer for the probe's whole bound.
    expect(probes).toBe(0)
  })
})
