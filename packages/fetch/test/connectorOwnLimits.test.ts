import { once } from 'node:events'
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import {
  ConnectTimeoutError,
  createConnector,
  createFetch,
  DnsTimeoutError,
  deadlineInterceptor,
} from '../src/index.js'
import { rejection } from './helpers.js'

// `createConnector` runs the DNS and connect phases, and its options say how
// long each may take. When a request through the interceptor (or
// createFetch) opened the connection, that request's own options were used
// instead: `createConnector({ connectTimeoutMs: 300 })` under
// `deadlineInterceptor()` waited the interceptor's default 3000 ms, and a
// `dispatcher` given to createFetch — documented to keep its own connect
// logic — had createFetch's limits in place of its connector's. The deadline
// of the request that opened the connection still bounds both phases.

let server: Server | undefined
const accepted: Socket[] = []
const agents: Agent[] = []
afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.destroy()))
  for (const socket of accepted.splice(0)) socket.destroy()
  if (server) {
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
}

it("the interceptor: a name lookup is bounded by the connector's dnsTimeoutMs, not the interceptor's", async () => {
  const clock = new ManualClock()
  let asked = false
  const agent = new Agent({
    connect: createConnector({
      lookup: () => {
        asked = true // never answers
      },
      dnsTimeoutMs: 50,
      clock,
    }),
  })
  agents.push(agent)
  const dispatcher = agent.compose(deadlineInterceptor({ clock })) // its default: 1000
  const deadline = Deadline.after(30_000, { clock })

  const call = rejection(request('http://slow.test/', { dispatcher, deadline } as never))
  await turns(2)
  expect(asked).toBe(true)
  clock.advance(50)
  await turns(5)
  clock.advance(5000) // past the interceptor's own limit, should the connector's have been ignored
  const error = await call
  expect(error).toBeInstanceOf(DnsTimeoutError)
  expect(error).toMatchObject({ code: 'DNS_TIMEOUT', limitMs: 50, hostname: 'slow.test' })
  deadline.dispose()
})

it("createFetch with a dispatcher of yours: a stalled TLS handshake is bounded by that dispatcher's connector, not createFetch's connectTimeoutMs", async () => {
  server = createServer((socket) => accepted.push(socket)) // accepts, never says a word
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as AddressInfo).port
  const clock = new ManualClock()
  const agent = new Agent({ connect: createConnector({ connectTimeoutMs: 100, clock }) })
  agents.push(agent)
  const fetch = createFetch({ dispatcher: agent, clock }) // its default: 3000
  const deadline = Deadline.after(30_000, { clock })

  const connected = once(server, 'connection')
  const call = rejection(fetch(`https://127.0.0.1:${port}/`, { deadline }))
  await connected
  await turns(2)
  clock.advance(100)
  await turns(5)
  clock.advance(5000)
  const error = await call
  expect(error).toBeInstanceOf(ConnectTimeoutError)
  expect(error).toMatchObject({ code: 'CONNECT_TIMEOUT', phase: 'connect', limitMs: 100 })
  deadline.dispose()
})
