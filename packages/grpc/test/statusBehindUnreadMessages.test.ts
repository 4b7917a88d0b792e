import net from 'node:net'
import { Metadata, type ServerWritableStream, type ServiceError, status } from '@grpc/grpc-js'
import { currentDeadline } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { deadlineServerInterceptor, type GrpcServerEndMessage, grpcChannels } from '../src/index.js'
import {
  connect,
  deferred,
  type RunningServer,
  record,
  startServer,
  unary,
} from './support/grpc.js'

// A stream's DEADLINE_EXCEEDED goes out after the messages written before
// it, and HTTP/2 flow control holds those while nobody reads them: a proxy
// that stops forwarding here. What the README's Limits says happens then.

const BIG = 'x'.repeat(64 * 1024)

interface Stalling {
  port: number
  stalled: boolean
  resume(): void
  close(): void
}

/** A TCP proxy that stops forwarding the server's bytes once `stalled` is set, until `resume()`. */
async function stallingProxy(target: string): Promise<Stalling> {
  const [host, port] = target.split(':')
  const sockets: net.Socket[] = []
  const held: Array<() => void> = []
  const proxy = net.createServer((down) => {
    const up = net.connect(Number(port), host)
    sockets.push(up, down)
    down.pipe(up)
    up.on('data', (chunk) => {
      if (!state.stalled) {
        down.write(chunk)
        return
      }
      up.pause()
      held.push(() => {
        down.write(chunk)
        up.resume()
      })
    })
    up.on('error', () => {})
    down.on('error', () => {})
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const state: Stalling = {
    port: (proxy.address() as net.AddressInfo).port,
    stalled: false,
    resume() {
      state.stalled = false
      for (const go of held.splice(0)) go()
    },
    close() {
      for (const socket of sockets) socket.destroy()
      proxy.close()
    },
  }
  return state
}

let server: RunningServer | undefined
let proxy: Stalling | undefined
afterEach(async () => {
  proxy?.close()
  await server?.close()
})

/**
 * A server stream that writes big messages until its deadline (the budget
 * sent less `reserveMs`) stops it; the proxy stalls after the first few.
 */
async function setUp(reserveMs = 20) {
  const aborted = deferred()
  server = await startServer(
    {
      serverStream(call: ServerWritableStream<unknown, unknown>) {
        const signal = currentDeadline()!.signal
        signal.addEventListener('abort', () => aborted.resolve())
        let i = 0
        const pump = () => {
          while (!signal.aborted && i < 64) {
            if (++i === 3) proxy!.stalled = true
            if (!call.write({ BIG, i })) {
              call.once('drain', pump)
              return
            }
          }
        }
        pump()
      },
      unary(_call: unknown, callback: (error: null, value: unknown) => void) {
        callback(null, { pong: true })
      },
    },
    [deadlineServerInterceptor({ reserveMs })],
  )
  proxy = await stallingProxy(server.address)
  return { aborted: aborted.promise, client: connect(`127.0.0.1:${proxy.port}`) }
}

function statusOf(stream: import('@grpc/grpc-js').ClientReadableStream<unknown>) {
  stream.on('data', () => {})
  stream.on('error', () => {}) // the status is what the caller reads
  return new Promise<{ code: number; details: string }>((resolve) => stream.on('status', resolve))
}

it('a client with grpc-timeout gets DEADLINE_EXCEEDED from its own timer while the status is held behind unread messages', async () => {
  const ends = record<GrpcServerEndMessage>(grpcChannels.serverEnd)
  try {
    // The server's deadline must run out (its status held behind the
    // messages) before the client's grpc-js timer resets the stream. The
    // grpc-timeout is relative: whatever the call spends between the client
    // writing it and the server reading it (through the proxy, in this one
    // process) moves the server's deadline that much past the client's, and
    // the client's reset then takes its own trip. With `reserveMs: 20`, a
    // loaded machine that held the headers 20 ms longer than the reset let
    // the reset arrive first: a run beside the other files read
    // `client-cancelled`, CANCELLED (so did holding the proxy's forwarding of
    // the headers 60 ms). Half the 1000 ms kept back: either side has 500 ms.
    const { aborted, client } = await setUp(500)
    // Connected first (the unary call goes through the proxy too): the
    // 1000 ms of wall clock are for the call to reach the handler (which
    // starts the stall) with more than the 500 ms reserve left.
    const connected = await unary(client, {}, { deadline: Date.now() + 10_000 })
    expect(connected.error as ServiceError | undefined).toBeUndefined()
    const stream = client.serverStream({}, new Metadata(), { deadline: Date.now() + 1000 })
    const ended = await statusOf(stream)
    await aborted
    expect(ended.code).toBe(status.DEADLINE_EXCEEDED)
    // grpc-js's words, its own timer's: ours is still behind the messages.
    expect(ended.details).toMatch(/^Deadline exceeded after/)
    expect(proxy!.stalled).toBe(true)
    await ends.count(2)
    expect(ends.messages.find((m) => m.method.endsWith('/ServerStream'))).toMatchObject({
      outcome: 'expired',
      code: status.DEADLINE_EXCEEDED,
    })
    client.close()
  } finally {
    ends.stop()
  }
})

it('a client with only x-deadline-remaining-ms gets the status once the messages before it are read; the handler stopped on time', async () => {
  const ends = record<GrpcServerEndMessage>(grpcChannels.serverEnd)
  try {
    const { aborted, client } = await setUp()
    const metadata = new Metadata()
    metadata.set('x-deadline-remaining-ms', '300')
    const stream = client.serverStream({}, metadata, {})
    let settled = false
    const ended = statusOf(stream).finally(() => {
      settled = true
    })
    await aborted
    // A round trip on a connection of its own, after the deadline answered:
    // the stalled call has not ended, for the client or for the server.
    const direct = connect(server!.address)
    expect((await unary(direct, {})).error as ServiceError | undefined).toBeUndefined()
    direct.close()
    expect(settled).toBe(false)
    expect(ends.messages.filter((m) => m.method.endsWith('/ServerStream'))).toEqual([])
    proxy!.resume()
    const { code, details } = await ended
    expect(code).toBe(status.DEADLINE_EXCEEDED)
    expect(details).toMatch(/x-deadline-remaining-ms/) // ours
    await ends.count(2)
    expect(ends.messages.find((m) => m.method.endsWith('/ServerStream'))).toMatchObject({
      outcome: 'expired',
    })
    client.close()
  } finally {
    ends.stop()
  }
})
