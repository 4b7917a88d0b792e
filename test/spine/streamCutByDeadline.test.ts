import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import * as grpc from '@grpc/grpc-js'
import { currentDeadline, ManualClock } from '@hourglass/core'
import {
  deadline,
  deadlineErrors,
  expressChannels,
  type IngressEndMessage,
} from '@hourglass/express'
import { deadlineServerInterceptor, deadlineErrors as grpcDeadlineErrors } from '@hourglass/grpc'
import { callModel, type ModelAdapter, openAICompatible } from '@hourglass/llm'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import express, { type ErrorRequestHandler } from 'express'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

/**
 * A streamed model call cut after its first token fails with llm's
 * `StreamInterruptedError` (it carries the partial answer), whose cause is
 * what cut it. The framework error mappers judge it by that cause, as they
 * judge the same call not streamed: a slice that ran out is the deadline's
 * (ingress `expired`, gRPC `DEADLINE_EXCEEDED` naming the slice), a client
 * that left is nobody's business. Before, the wrapper reached the user's
 * error handlers (a stack per departed client), the ingress called a
 * deadline's cut `client-closed`, and gRPC answered `UNKNOWN`.
 */

const WORDS = Array.from({ length: 40 }, (_, i) => ` w${i}`).join('')
const MESSAGES = [{ role: 'user' as const, content: 'hi' }]

let fake: FakeProvider
let model: ModelAdapter
beforeAll(async () => {
  fake = await startFakeProvider({ dialect: 'openai' })
  model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-test-123456', model: 'gpt-x' })
})
afterAll(async () => {
  await model.close?.()
  await fake.close()
})

describe('express: a streamed answer cut after its first token', () => {
  let server: http.Server
  let port: number
  const userHandlerSaw: unknown[] = []
  const ends: IngressEndMessage[] = []
  const onEnd = (m: unknown) => ends.push(m as IngressEndMessage)

  beforeAll(async () => {
    const app = express()
    // The request's clock is the test's: its slice (a child of the request's
    // deadline, as `req.plan` makes one) runs out when the test says so.
    const clock = new ManualClock()
    app.use(deadline({ defaultMs: 30_000, clock }))
    app.get('/slice', async (req, res) => {
      const slice = req.deadline.child(10_000, { name: 'model' })
      const runOut = () => clock.advance(10_000)
      const stream = callModel({
        models: [model],
        request: { messages: MESSAGES, maxTokens: 100, stream: true },
        deadline: slice,
      })
      for await (const event of stream) {
        if (event.type !== 'text') continue
        res.write(event.text)
        runOut()
      }
      res.end()
    })
    app.get('/leave', async (_req, res) => {
      const stream = callModel({
        models: [model],
        request: { messages: MESSAGES, maxTokens: 100, stream: true },
      })
      for await (const event of stream) if (event.type === 'text') res.write(event.text)
      res.end()
    })
    app.use(deadlineErrors())
    const mine: ErrorRequestHandler = (error, _req, res, _next) => {
      userHandlerSaw.push(error)
      res.destroy()
    }
    app.use(mine)
    server = app.listen(0, '127.0.0.1')
    await once(server, 'listening')
    port = (server.address() as AddressInfo).port
    expressChannels.end.subscribe(onEnd)
  })
  afterAll(async () => {
    expressChannels.end.unsubscribe(onEnd)
    server.closeAllConnections()
    server.close()
  })
  afterEach(() => {
    userHandlerSaw.length = 0
    ends.length = 0
  })

  /** GET `path`; `leave` hangs up after the first chunk. Resolves when the ingress reports the end. */
  async function get(path: string, leave: boolean): Promise<IngressEndMessage> {
    const ended = new Promise<IngressEndMessage>((resolve) => {
      const poll = (m: unknown) => {
        expressChannels.end.unsubscribe(poll)
        resolve(m as IngressEndMessage)
      }
      expressChannels.end.subscribe(poll)
    })
    const req = http.get({ port, path, host: '127.0.0.1' }, (res) => {
      res.once('data', () => {
        if (leave) req.destroy()
      })
      res.on('error', () => {})
      res.resume()
    })
    req.on('error', () => {})
    return ended
  }

  it('its slice running out ends the response as the deadline: outcome expired, nothing for the user handler', async () => {
    fake.setReply(reply.text(WORDS, { tokenDelayMs: 5 }))
    const end = await get('/slice', false)
    expect(end.outcome).toBe('expired')
    expect(userHandlerSaw).toEqual([])
    // The provider's generation was stopped, not read to its end.
    const last = fake.requests.at(-1)
    expect(last?.outcome).not.toBe('completed')
  })

  it('a client that leaves mid-stream reaches no error handler', async () => {
    fake.setReply(reply.text(WORDS, { tokenDelayMs: 20 }))
    const end = await get('/leave', true)
    expect(end.outcome).toBe('client-closed')
    // The handler's own rejection arrives after the ingress saw the close.
    await expect.poll(() => fake.requests.at(-1)?.outcome).not.toBe('pending')
    await new Promise((resolve) => setImmediate(resolve))
    expect(userHandlerSaw).toEqual([])
  })
})

describe('gRPC: a server-streamed answer cut by its slice', () => {
  const json = {
    serialize: (v: unknown) => Buffer.from(JSON.stringify(v)),
    deserialize: (b: Buffer) => JSON.parse(b.toString()) as unknown,
  }
  const service = {
    stream: {
      path: '/t.S/Stream',
      requestStream: false,
      responseStream: true,
      requestSerialize: json.serialize,
      requestDeserialize: json.deserialize,
      responseSerialize: json.serialize,
      responseDeserialize: json.deserialize,
    },
  }
  let server: grpc.Server
  let client: grpc.Client & { stream(req: unknown): grpc.ClientReadableStream<unknown> }

  beforeAll(async () => {
    // The call's clock is the test's: its slice (a child of the call's
    // deadline, as a plan makes one) runs out when the test says so. A
    // deadline of no relation to the call's (a cap of the handler's own) is
    // no expiry of the call: passed on as any other error (UNKNOWN).
    const clock = new ManualClock()
    server = new grpc.Server({
      interceptors: [deadlineServerInterceptor({ defaultMs: 30_000, clock })],
    })
    server.addService(
      service,
      grpcDeadlineErrors({
        async stream(call: grpc.ServerWritableStream<unknown, unknown>) {
          const slice = currentDeadline()!.child(10_000, { name: 'model' })
          const runOut = () => clock.advance(10_000)
          const answer = callModel({
            models: [model],
            request: { messages: MESSAGES, maxTokens: 100, stream: true },
            deadline: slice,
          })
          for await (const event of answer) {
            if (event.type !== 'text') continue
            call.write({ t: event.text })
            runOut()
          }
          call.end()
        },
      }),
    )
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    )
    const Client = grpc.makeGenericClientConstructor(service, 'S')
    client = new Client(
      `127.0.0.1:${port}`,
      grpc.credentials.createInsecure(),
    ) as unknown as typeof client
  })
  afterAll(() => {
    client.close()
    server.forceShutdown()
  })

  it('answers DEADLINE_EXCEEDED naming the slice, not UNKNOWN', async () => {
    fake.setReply(reply.text(WORDS, { tokenDelayMs: 5 }))
    const call = client.stream({})
    call.on('data', () => {})
    const [error] = (await once(call, 'error')) as [grpc.ServiceError]
    expect(grpc.status[error.code]).toBe('DEADLINE_EXCEEDED')
    expect(error.details).toContain('model')
    // The call sent no deadline: the budget was the server's own (defaultMs),
    // so nothing tells the caller its budget is gone.
    expect(error.metadata.get('x-deadline-expired')).toEqual([])
  })
})
