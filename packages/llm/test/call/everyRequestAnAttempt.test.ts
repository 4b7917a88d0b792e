import diagnostics from 'node:diagnostics_channel'
import { once } from 'node:events'
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { defaultRetryBudgets } from '../../src/retry/defaultRetryBudgets.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
// Every request @hourglass/fetch sends, its own retries included.
const egress: unknown[] = []
const onEgress = (message: unknown) => egress.push(message)
beforeAll(() => diagnostics.subscribe('hourglass:egress:attempt', onEgress))
afterAll(() => diagnostics.unsubscribe('hourglass:egress:attempt', onEgress))
const servers: Array<{ server: Server; sockets: Set<Socket> }> = []
afterEach(async () => {
  egress.length = 0
  for (const { server, sockets } of servers.splice(0)) {
    for (const socket of sockets) socket.destroy()
    server.close()
  }
})

/** A loopback port nothing listens on (yet): connecting to it is refused at once. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  await once(server, 'close')
  return port
}

/** Starts listening on `port`, forwarding every connection to `targetPort`. */
async function forward(port: number, targetPort: number): Promise<void> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    const upstream = connect(targetPort, '127.0.0.1')
    for (const s of [socket, upstream]) {
      sockets.add(s)
      s.on('error', () => {
        socket.destroy()
        upstream.destroy()
      })
    }
    socket.pipe(upstream).pipe(socket)
  })
  servers.push({ server, sockets })
  server.listen(port, '127.0.0.1')
  await once(server, 'listening')
}

describe('every upstream request is an attempt', () => {
  it('a refused connect is an attempt of its own: recorded, charged to the retry budget, retried by the policy', async () => {
    const port = await freePort()
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('connected') })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: `http://127.0.0.1:${port}/v1`,
        apiKey: 'sk',
        model: 'gpt-4o-mini',
        name: 'refusing',
      }),
    )
    const clock = new ManualClock()
    using deadline = Deadline.after(60_000, { clock })
    const records: AttemptRecord[] = []
    let retrying: () => void = () => {}
    const retryDecided = new Promise<void>((resolve) => {
      retrying = resolve
    })
    const call = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 16 },
      deadline,
      onAttempt: (r) => {
        records.push(r)
        if (r.decision === 'retry') retrying()
      },
      retry: { delay: { random: () => 0 } },
    })
    await retryDecided
    // fetch's own fast-connect retry is off in adapters: nothing was resent behind the policy's back.
    expect(egress).toHaveLength(1)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ status: 0, errorKind: 'network', decision: 'retry' })
    expect(records[0]?.delayMs).toBe(1000) // the policy's backoff, on the deadline's clock
    expect(defaultRetryBudgets().forProvider(model).tokens).toBe(9)

    // The provider comes up; the policy's wait ends.
    const { port: fakePort } = new URL(fake.url)
    await forward(port, Number(fakePort))
    clock.advance(1000)
    const answer = await call
    expect(answer.text).toBe('connected')
    expect(records.map((r) => [r.attempt, r.decision])).toEqual([
      [1, 'retry'],
      [2, 'success'],
    ])
    expect(fake.requests).toHaveLength(1)
    expect(egress).toHaveLength(2) // one upstream request per attempt record
    expect(defaultRetryBudgets().forProvider(model).tokens).toBeCloseTo(9.1, 10)
  })
})
