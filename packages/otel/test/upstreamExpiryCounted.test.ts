import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { callModel, openAICompatible } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * `hourglass.deadline.exceeded{stage=upstream}` "counts upstreams that
 * answered that their own deadline ran out": a 504 with
 * `x-deadline-expired: 1`, as @hourglass/express and @hourglass/gateway
 * answer. It was counted only from fetch's `retry-skipped`, which fetch
 * publishes only when retries are on: a `createFetch({ retry: false })`
 * call, and every model attempt (llm sends with `retry: false`) to a
 * gateway that ran out, were never counted.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
let server: Server
let base: string

beforeEach(async () => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
  server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(504, { 'x-deadline-expired': '1', 'content-type': 'application/json' })
      res.end('{"error":{"message":"deadline","type":"server_error","code":"deadline_exceeded"}}')
    })
  }).listen(0)
  await new Promise((resolve) => server.once('listening', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterEach(async () => {
  stop()
  server.close()
  await otel.shutdown()
})

async function upstreamCount(): Promise<number> {
  return (await otel.points('hourglass.deadline.exceeded'))
    .filter((p) => p.attributes['hourglass.deadline.stage'] === 'upstream')
    .reduce((sum, p) => sum + (p.value as number), 0)
}

it.each([
  ['retries on (the default)', {}],
  ['retry: false', { retry: false as const }],
])('createFetch, %s: one upstream expiry', async (_label, options) => {
  const fetch = createFetch(options)
  const deadline = Deadline.after(60_000, { clock: new ManualClock() })
  try {
    const res = await runWithDeadline(deadline, () => fetch(`${base}/price`))
    await res.text()
    expect(res.status).toBe(504)
  } finally {
    deadline.dispose()
    await fetch.close()
  }
  expect(await upstreamCount()).toBe(1)
})

it('a model attempt to a gateway whose deadline ran out: one upstream expiry', async () => {
  const fetch = createFetch()
  const model = openAICompatible({ baseURL: `${base}/v1`, apiKey: 'sk', model: 'm', fetch })
  const deadline = Deadline.after(60_000, { clock: new ManualClock() })
  try {
    await expect(
      callModel({
        models: [model],
        request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 5 },
        deadline,
      }),
    ).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  } finally {
    deadline.dispose()
    await fetch.close()
  }
  expect(await upstreamCount()).toBe(1)
})
