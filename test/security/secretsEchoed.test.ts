import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createGateway, type GatewayRouter, type LogRecord } from '@hourglass/gateway'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { closedPort } from '@hourglass/testkit'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import express from 'express'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { collectStrings } from '../support/collectStrings.js'
import { type ChannelLog, recordChannels } from '../support/recordChannels.js'

/**
 * A provider (or the proxy in front of it) that echoes every credential it
 * was sent — whole, in every place an answer has: a JSON error's message,
 * code and param, a text/plain 500, a 200 that is no JSON, an error event in
 * a stream, a redirect's Location (as userinfo and as a query token) — for
 * each dialect, behind the gateway, called through the official `openai`
 * client. Every key, header value and the Redis password carries a marker;
 * none may appear in a log record, a reply the client got, `/metrics`,
 * `/readyz`, a diagnostics message or an OpenTelemetry span (a tracer
 * provider passed in: no global is set).
 *
 * secrets.test.ts scans a chaos run whose providers answer with the catalogue
 * of real error bodies; this one makes the provider hostile.
 */

const MARK = {
  openaiKey: 'MARK-oa-7f3c2e91b0',
  anthropicKey: 'MARK-an-51d0a8c4e6',
  geminiKey: 'MARK-ge-c09b7d2a13',
  headerToken: 'MARK-hd-8e26f1b4c7',
  redisPassword: 'MARK-rp-2b94e0d6f5',
  edgeKey: 'MARK-ed-4a71c3e8d2',
}

const MODES = ['echo401', 'echo429', 'echo500text', 'garbage200', 'redirect', 'streamError']
const DIALECTS = ['openai', 'anthropic', 'gemini'] as const

let provider: Server
let gateway: GatewayRouter
let server: Server
let url: string
let client: OpenAI
let channels: ChannelLog
let stopOtel: StopInstrumentation
const exporter = new InMemorySpanExporter()
const tracerProvider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(exporter)],
})
const meterProvider = new MeterProvider()
const logs: LogRecord[] = []
const replies: string[] = []
const thrown: unknown[] = []
let metrics = ''
let readyz = ''

/** Every credential header the provider got, as it got them. */
function credentials(req: IncomingMessage): string {
  const names = ['authorization', 'x-api-key', 'x-goog-api-key', 'x-proxy-token']
  return names
    .map((n) => req.headers[n])
    .filter((v) => typeof v === 'string')
    .join(' ')
}

/** The mode is the model asked for: in the body, or (Gemini) in the path. */
function modeOf(req: IncomingMessage, body: string): string {
  const inPath = MODES.find((m) => req.url?.includes(`/models/${m}:`))
  if (inPath) return inPath
  try {
    return String((JSON.parse(body) as { model?: unknown }).model)
  } catch {
    return ''
  }
}

function startProvider(): Promise<Server> {
  const server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => {
      body += chunk
    })
    req.on('end', () => {
      const echoed = credentials(req)
      const json = { 'content-type': 'application/json' }
      switch (modeOf(req, body)) {
        case 'echo401':
          res.writeHead(401, json).end(
            JSON.stringify({
              error: {
                message: `Incorrect API key provided: ${echoed}`,
                type: 'invalid_request_error',
                code: echoed,
                param: echoed,
              },
            }),
          )
          return
        case 'echo429':
          res
            .writeHead(429, { ...json, 'retry-after': '0' })
            .end(JSON.stringify({ error: { message: `rate limit for ${echoed}`, code: echoed } }))
          return
        case 'echo500text':
          res.writeHead(500, { 'content-type': 'text/plain' }).end(`proxy failed: ${echoed}`)
          return
        case 'garbage200':
          res.writeHead(200, json).end(`not json ${echoed} {`)
          return
        case 'redirect': {
          const token = echoed.split(' ').at(-1) ?? ''
          res
            .writeHead(307, { location: `https://u:${token}@login.example/sso?token=${token}` })
            .end()
          return
        }
        default: {
          // streamError: an error event inside a 200 stream.
          res.writeHead(200, { 'content-type': 'text/event-stream' })
          res.end(
            `data: ${JSON.stringify({ error: { message: `stream failed for ${echoed}`, type: 'server_error' } })}\n\n`,
          )
        }
      }
    })
  })
  server.listen(0, '127.0.0.1')
  return once(server, 'listening').then(() => server)
}

beforeAll(async () => {
  stopOtel = instrumentDeadlines({ tracerProvider, meterProvider })
  channels = recordChannels()
  provider = await startProvider()
  const port = await closedPort()
  const base = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`
  const models: Record<string, unknown> = {}
  for (const mode of MODES) {
    for (const dialect of DIALECTS) {
      models[`${mode}-${dialect}`] = { fallback: [{ provider: dialect, model: mode }] }
    }
  }
  // createGateway, not startGateway: that one waits up to 2 s for the Redis that is down.
  gateway = createGateway(
    {
      providers: {
        openai: {
          dialect: 'openai',
          baseURL: `${base}/v1`,
          apiKeys: [MARK.openaiKey],
          headers: { 'x-proxy-token': `Token ${MARK.headerToken}` },
        },
        anthropic: { dialect: 'anthropic', baseURL: base, apiKeys: [MARK.anthropicKey] },
        gemini: { dialect: 'gemini', baseURL: `${base}/v1beta`, apiKeys: [MARK.geminiKey] },
      },
      models,
      // One attempt: the failures are the point, not the retries.
      policy: { maxAttempts: 1, max529Retries: 0 },
      // Nothing listens there: Redis is down from the start, with a password in its URL.
      redis: {
        url: `redis://:${MARK.redisPassword}@127.0.0.1:${port}/0`,
        commandTimeoutMs: 50,
      },
    },
    { logger: (record) => logs.push(record), logLevel: 'debug' },
  )
  server = express().use(gateway).listen(0, '127.0.0.1')
  await once(server, 'listening')
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: MARK.edgeKey, maxRetries: 0 })
  for (const mode of MODES) {
    for (const dialect of DIALECTS) {
      for (const stream of [false, true]) {
        try {
          const request = {
            model: `${mode}-${dialect}`,
            messages: [{ role: 'user' as const, content: 'hi' }],
          }
          if (stream) {
            for await (const chunk of await client.chat.completions.create({
              ...request,
              stream,
            })) {
              replies.push(JSON.stringify(chunk))
            }
          } else {
            replies.push(JSON.stringify(await client.chat.completions.create(request)))
          }
        } catch (error) {
          thrown.push(error)
        }
      }
    }
  }
  metrics = await (await fetch(`${url}/metrics`)).text()
  readyz = await (await fetch(`${url}/readyz`)).text()
}, 30_000)

afterAll(async () => {
  channels.stop()
  stopOtel()
  await gateway?.close()
  server?.close()
  provider?.close()
  await tracerProvider.shutdown()
  await meterProvider.shutdown()
})

function leaks(texts: readonly string[]): string[] {
  const needles = Object.values(MARK)
  return texts.filter((t) => needles.some((n) => t.includes(n))).map((t) => t.slice(0, 300))
}

describe('credentials a hostile provider echoes reach no place an operator looks', () => {
  it('the run failed in every way planned, and the provider did echo the credentials', () => {
    expect(thrown.length).toBeGreaterThan(MODES.length * DIALECTS.length)
    expect(logs.length).toBeGreaterThan(MODES.length * DIALECTS.length)
    // Redis was tried and found down (its URL, password and all, was in use).
    expect(logs.map((r) => r.event)).toEqual(expect.arrayContaining(['redis']))
    // The control: the scanner finds a marker where one is.
    expect(leaks([`x ${MARK.headerToken} y`])).toHaveLength(1)
  })

  it('none in a log record', () => {
    expect(leaks(logs.map((record) => JSON.stringify(record)))).toEqual([])
  })

  it('none in what the client got (bodies, SDK errors with their causes)', () => {
    const errors = thrown.flatMap((e) => [
      ...collectStrings(e, { skipKeys: ['headers'] }),
      JSON.stringify((e as { error?: unknown }).error ?? null),
    ])
    expect(leaks([...replies, ...errors])).toEqual([])
  })

  it('none in /metrics or /readyz', () => {
    expect(metrics).toContain('# TYPE')
    expect(leaks([metrics, readyz])).toEqual([])
  })

  it('none in a diagnostics message', () => {
    const texts = channels.messages.flatMap((m) =>
      collectStrings(m.message, { skipKeys: ['req', 'res'] }),
    )
    expect(channels.messages.length).toBeGreaterThan(0)
    expect(leaks(texts)).toEqual([])
  })

  it('none in a span name, attribute, event or status', () => {
    const spans = exporter.getFinishedSpans()
    const texts = spans.flatMap((s) => [
      s.name,
      s.status.message ?? '',
      ...collectStrings(s.attributes),
      ...s.events.flatMap((e) => [e.name, ...collectStrings(e.attributes ?? {})]),
    ])
    expect(spans.length).toBeGreaterThan(0)
    expect(leaks(texts)).toEqual([])
  })
})
