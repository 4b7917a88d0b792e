import diagnostics from 'node:diagnostics_channel'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, get, type IncomingMessage, type Server } from 'node:http'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ManualClock } from '@hourglass/core'
import {
  expressChannels,
  type IngressEndMessage,
  type IngressExpireMessage,
  type IngressStartMessage,
} from '@hourglass/express'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createGateway,
  type GatewayRouter,
  type LogRecord,
  type RunningGateway,
  startGateway,
} from '../src/index.js'
import { fakeProvider, fallback } from './support/harness.js'

/**
 * Every deadline end the gateway answers is one @hourglass/express publishes
 * (its `expire` event, `expired` at the end: what OpenTelemetry's
 * `hourglass.deadline.exceeded` and the server span read) and one the
 * gateway's `hourglass_gateway_deadline_expiries_total` counts, once. Two
 * did not reach the first: a non-streamed answer cut at the deadline because
 * its client did not read it, and a budget spent on arrival (refused ahead
 * of `deadline()`, which then never saw the request).
 */

// 1 MB of answer: more than a Unix socket buffers, so a client that reads
// nothing leaves the gateway waiting on it (as test/operators/unreadAnswer).
const ANSWER = ` ${'abcdefghij'.repeat(200)}`.repeat(500).slice(1)

/** The ingress messages of requests with `x-request-id: id`, until the test ends. */
function recordIngress(id: string, stops: Array<() => void>) {
  const started: IngressStartMessage[] = []
  const expired: IngressExpireMessage[] = []
  const ended: IngressEndMessage[] = []
  let resolveEnded: () => void = () => {}
  const whenEnded = new Promise<void>((resolve) => {
    resolveEnded = resolve
  })
  const ours = (req: unknown) => (req as IncomingMessage).headers['x-request-id'] === id
  const onStart = (m: unknown) => {
    if (ours((m as IngressStartMessage).req)) started.push(m as IngressStartMessage)
  }
  const onExpire = (m: unknown) => {
    if (ours((m as IngressExpireMessage).req)) expired.push(m as IngressExpireMessage)
  }
  const onEnd = (m: unknown) => {
    if (!ours((m as IngressEndMessage).req)) return
    ended.push(m as IngressEndMessage)
    resolveEnded()
  }
  diagnostics.subscribe(expressChannels.start.name, onStart)
  diagnostics.subscribe(expressChannels.expire.name, onExpire)
  diagnostics.subscribe(expressChannels.end.name, onEnd)
  stops.push(() => {
    diagnostics.unsubscribe(expressChannels.start.name, onStart)
    diagnostics.unsubscribe(expressChannels.expire.name, onExpire)
    diagnostics.unsubscribe(expressChannels.end.name, onEnd)
  })
  return { started, expired, ended, whenEnded }
}

/** A counter's value on a Prometheus page (0 when absent). */
function counter(page: string, name: string): number {
  const line = page.split('\n').find((l) => l.startsWith(`${name} `))
  return line === undefined ? 0 : Number(line.slice(name.length + 1))
}

describe('deadline ends the gateway answers are reported and counted once', () => {
  let dir: string | undefined
  let fake: FakeProvider | undefined
  let gateway: GatewayRouter | undefined
  let running: RunningGateway | undefined
  let server: Server | undefined
  let socket: Socket | undefined
  const stops: Array<() => void> = []
  afterEach(async () => {
    for (const stop of stops.splice(0)) stop()
    socket?.destroy()
    server?.closeAllConnections()
    if (server) await new Promise((resolve) => server?.close(resolve))
    await gateway?.close()
    await running?.close()
    await fake?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
    dir = fake = gateway = running = server = socket = undefined
  })

  for (const [header, value, budgetMs] of [
    ['x-deadline-remaining-ms', '1', 1],
    ['grpc-timeout', '0S', 0],
  ] as const) {
    it(`a budget spent on arrival (${header}: ${value}): the gateway's 504, published as an arrival expiry, logged and counted once`, async () => {
      const provider = await fakeProvider('openai', ['k'])
      fake = provider.fake
      const lines: LogRecord[] = []
      running = await startGateway({
        port: 0,
        clock: new ManualClock(),
        config: {
          providers: { p: provider.entry },
          models: { m: fallback(['p', 'gpt']) },
          deadline: { defaultMs: 60_000, reserveMs: 10 },
        },
        logger: (record) => void (record['event'] === 'request' && lines.push(record)),
      })
      const ingress = recordIngress('spent-on-arrival', stops)
      const res = await fetch(`${running.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-request-id': 'spent-on-arrival',
          [header]: value,
        },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      })
      // The gateway's own answer, in OpenAI's error shape, that the SDKs do not retry.
      expect(res.status).toBe(504)
      expect(res.headers.get('x-should-retry')).toBe('false')
      expect(res.headers.get('x-deadline-expired')).toBe('1')
      expect(res.headers.get('x-request-id')).toBe('spent-on-arrival')
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
        'deadline_exceeded',
      )
      // What express publishes for any app: a start, an arrival expiry (both
      // before the 504 is written), an expired end (once it is flushed).
      expect(ingress.started.map((m) => [m.source, m.budgetMs])).toEqual([[header, budgetMs]])
      expect(ingress.expired.map((m) => [m.stage, m.action])).toEqual([['arrival', '504']])
      await ingress.whenEnded
      expect(ingress.ended.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
      expect(lines).toEqual([
        expect.objectContaining({
          requestId: 'spent-on-arrival',
          status: 504,
          error: 'deadline_exceeded',
        }),
      ])
      expect(fake.requests).toHaveLength(0)
      const page = await (await fetch(`${running.url}/metrics`)).text()
      expect(counter(page, 'hourglass_gateway_deadline_expiries_total')).toBe(1)
    })
  }

  it('a non-streamed answer cut at the deadline because its client did not read it: expired (action app), counted once', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    fake.setReply(reply.text(ANSWER))
    const lines: LogRecord[] = []
    const clock = new ManualClock()
    gateway = createGateway(
      {
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'gpt']) },
        deadline: { defaultMs: 60_000, reserveMs: 10 },
      },
      { clock, logger: (record) => void (record['event'] === 'request' && lines.push(record)) },
    )
    const router = gateway
    server = createServer((req, res) => router(req as never, res as never, () => res.end()))
    dir = await mkdtemp(join(tmpdir(), 'hourglass-reports-'))
    const path = join(dir, 'gateway.sock')
    server.listen(path)
    await once(server, 'listening')
    const ingress = recordIngress('unread-cut', stops)

    const client = connect(path)
    socket = client
    client.on('error', () => {})
    await once(client, 'connect')
    const text = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'all' }] })
    client.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\ncontent-type: application/json\r\n' +
        `x-request-id: unread-cut\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
    )
    // The answer's first bytes: written whole, and then nothing more is read.
    const [head] = (await once(client, 'data')) as [Buffer]
    client.pause()
    expect(head.toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n/)

    // The handler's deadline (59,965 ms) passes; the ingress one (59,990 ms) does not.
    clock.advance(59_970)
    await ingress.whenEnded
    expect(ingress.expired.map((m) => [m.stage, m.action])).toEqual([['handler', 'app']])
    expect(ingress.ended.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 200]])
    expect(lines).toEqual([
      expect.objectContaining({ requestId: 'unread-cut', status: 200, error: 'deadline_exceeded' }),
    ])
    const page = await new Promise<string>((resolve, reject) => {
      get({ socketPath: path, path: '/metrics' }, (res) => {
        let body = ''
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
        res.on('end', () => resolve(body))
      }).on('error', reject)
    })
    expect(counter(page, 'hourglass_gateway_deadline_expiries_total')).toBe(1)
  })
})
