import { EventEmitter } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { Agent, type Dispatcher, errors, stream } from 'undici'
import { expect, it } from 'vitest'
import { createConnector, deadlineInterceptor } from '../src/index.js'
import { rejection } from './helpers.js'
import { useCleanup } from './support/useCleanup.js'

// undici's first handler API hands `onConnect` an `abort(reason?)`; called
// with no reason, undici fails the request with its own
// `RequestAbortedError` (`UND_ERR_ABORTED`). undici calls it so itself:
// `stream()` and `pipeline()` when their `signal` is an EventEmitter (it
// has no reason to give), a body destroyed. Through the interceptor, such
// an abort reached the handler as a `DOMException` (`AbortError`, code 20):
// a caller matching undici's error (`instanceof errors.RequestAbortedError`,
// `code === 'UND_ERR_ABORTED'`) missed it.

const { keep } = useCleanup()

/** A server that takes each request and never answers it; resolves `arrived` as one comes in. */
async function silentServer(): Promise<{ url: string; arrived: Promise<void> }> {
  let arrive: () => void = () => {}
  const arrived = new Promise<void>((resolve) => {
    arrive = resolve
  })
  const server: Server = createServer(() => arrive())
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  keep({
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, arrived }
}

function dispatchers(): [string, Dispatcher][] {
  const plain = keep(new Agent())
  const ours = keep(new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 }))
  return [
    ['undici alone', plain],
    ['through the interceptor', ours.compose(deadlineInterceptor())],
  ]
}

it("stream() with an EventEmitter signal: its abort rejects with undici's RequestAbortedError, as without the interceptor", async () => {
  for (const [, dispatcher] of dispatchers()) {
    const server = await silentServer()
    const signal = new EventEmitter()
    const pending = stream(
      server.url,
      { dispatcher, signal, method: 'GET' },
      () => new Writable({ write: (_chunk, _encoding, done) => done() }),
    )
    await server.arrived
    signal.emit('abort')
    const error = await rejection(pending)
    expect(error).toBeInstanceOf(errors.RequestAbortedError)
    expect(error).toMatchObject({ name: 'AbortError', code: 'UND_ERR_ABORTED' })
  }
})

it("a first-API handler's abort() with no reason: its onError gets undici's RequestAbortedError, as without the interceptor", async () => {
  for (const [, dispatcher] of dispatchers()) {
    const server = await silentServer()
    let abort: ((reason?: Error) => void) | undefined
    const failed = new Promise<unknown>((resolve) => {
      dispatcher.dispatch({ origin: new URL(server.url).origin, path: '/', method: 'GET' }, {
        onConnect: (given: (reason?: Error) => void) => {
          abort = given
        },
        onHeaders: () => true,
        onData: () => true,
        onComplete: () => resolve('completed'),
        onError: resolve,
      } as unknown as Dispatcher.DispatchHandler)
    })
    await server.arrived
    abort?.()
    const error = await failed
    expect(error).toBeInstanceOf(errors.RequestAbortedError)
    expect(error).toMatchObject({ code: 'UND_ERR_ABORTED' })
  }
})
