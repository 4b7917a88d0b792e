import { Readable, Writable } from 'node:stream'
import { pipeline as pipe } from 'node:stream/promises'
import { ManualClock } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, type Dispatcher, pipeline } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, deadlineInterceptor } from '../src/index.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// undici's pipeline() hands every request a stream body, a GET's too (what
// the caller writes into the Duplex it returns). Written whole without one
// byte, it was empty: the interceptor sends its retry with no body, the
// same request on the wire. Before, a GET's headers timeout or listed 503
// was never retried through pipeline() (`body-not-replayable`), where the
// same GET through request() was. No test here measures time: the phase
// timers run on a clock moved by hand.

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  closers.push(server)
  return server
}

function agent(options: Parameters<typeof deadlineInterceptor>[0]): Dispatcher {
  const base = new Agent({ connect: createConnector(options) })
  closers.push(base)
  return base.compose(deadlineInterceptor(options))
}

/** The answer's body through undici.pipeline, `upload` written into its Duplex. */
async function piped(
  url: string,
  dispatcher: Dispatcher,
  method: 'GET' | 'POST',
  upload: string[] = [],
): Promise<string> {
  const chunks: Buffer[] = []
  await pipe(
    Readable.from(upload),
    pipeline(url, { dispatcher, method }, ({ body }) => body),
    new Writable({
      write(chunk, _encoding, done) {
        chunks.push(chunk)
        done()
      },
    }),
  )
  return Buffer.concat(chunks).toString()
}

it('a pipeline() GET whose headers never came is retried once, and the retry answers', async () => {
  events = recordEgress()
  const server = await serve((_r, i) =>
    i === 0 ? { type: 'hang' } : { type: 'respond', body: 'again' },
  )
  const clock = new ManualClock(performance.now())
  const body = piped(server.url, agent({ headersTimeoutMs: 150, clock }), 'GET')
  await server.request(0) // written whole: the headers limit counts the server's silence
  clock.advance(150)
  expect(await body).toBe('again')
  expect(events.retries).toMatchObject([{ reason: 'HEADERS_TIMEOUT', attempt: 2 }])
  expect(events.skipped).toEqual([])
  expect(server.records.map((r) => r.headers['transfer-encoding'])).toEqual([undefined, undefined])
})

it('a pipeline() GET answered with a listed 503 is sent again, and the caller reads only the 200', async () => {
  const server = await serve((_r, i) =>
    i === 0 ? { type: 'retry-after', status: 503, retryAfter: 0 } : { type: 'respond', body: 'ok' },
  )
  const dispatcher = agent({ retry: { statuses: [503] } })
  expect(await piped(server.url, dispatcher, 'GET')).toBe('ok')
  expect(server.records).toHaveLength(2)
})

it('a pipeline() upload with bytes in it is still never sent twice', async () => {
  events = recordEgress()
  const server = await serve((_r, i) =>
    i === 0 ? { type: 'retry-after', status: 503, retryAfter: 0 } : { type: 'respond', body: 'ok' },
  )
  const dispatcher = agent({ retry: { statuses: [503], emptyRead: true } })
  await piped(server.url, dispatcher, 'POST', ['half of ', 'a body'])
  expect(server.records).toHaveLength(1)
  expect(events.skipped).toMatchObject([{ why: 'body-not-replayable' }])
})
