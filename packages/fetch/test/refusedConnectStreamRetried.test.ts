import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, LookupFunction } from 'node:net'
import { Readable } from 'node:stream'
import { Agent, interceptors, request, fetch as undiciFetch } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createConnector, deadlineInterceptor } from '../src/index.js'
import { frozenClock } from './support/frozenClock.js'
import { useCleanup } from './support/useCleanup.js'

// Through deadlineInterceptor, a connect refused at once sends nothing: undici
// reads a stream body only once connected, so the body can go with the retry
// as a string could — undici's own RetryHandler retries a stream body it has
// not disturbed. The call failed instead (`why: body-not-replayable`): a POST
// of a stream to a service whose first address refused failed, where the
// same POST with a string went to the second. A stream read from is still
// never sent again. (createFetch is not covered: undici's fetch() reads from
// the caller's stream before the connect fails.)

const cleanup = useCleanup()
let server: Server
let port: number
/** What the server received, `<path> <body>` a request. */
const received: string[] = []
beforeAll(async () => {
  server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => {
      text += chunk
    })
    req.on('end', () => {
      received.push(`${req.url} ${text}`)
      // Read, then sent on to a host whose connect is refused at once.
      if (req.url === '/redir') {
        res.writeHead(307, { location: `http://refused.test:${port}/` }).end()
      } else res.end(`got ${text}`)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  port = (server.address() as AddressInfo).port
})
afterAll(async () => {
  server.closeAllConnections()
  server.close()
  await once(server, 'close')
})

// A refused connect measured as fast: see support/frozenClock.ts.
const frozen = frozenClock
/** 127.0.0.2 first (loopback, nothing listening there: refused at once), then the server. */
function refusingFirst(): LookupFunction {
  const answers = ['127.0.0.2', '127.0.0.1']
  return (_host, _options, callback) => callback(null, answers.shift() ?? '127.0.0.1', 4)
}
const target = () => `http://svc.test:${port}/`

describe('deadlineInterceptor: a stream body whose connect was refused before undici read any of it', () => {
  it('a Node stream goes with the retry, whole', async () => {
    const events = cleanup.record()
    const agent = cleanup.keep(new Agent({ connect: createConnector({ lookup: refusingFirst() }) }))
    const dispatcher = agent.compose(deadlineInterceptor({ clock: frozen }))
    const body = Readable.from([Buffer.from('node')])
    const res = await request(target(), { dispatcher, method: 'POST', body })
    expect(await res.body.text()).toBe('got node')
    expect(events.retries).toMatchObject([{ attempt: 2, reason: 'CONNECT_FAILED' }])
  })

  it('an async generator too', async () => {
    const agent = cleanup.keep(new Agent({ connect: createConnector({ lookup: refusingFirst() }) }))
    const dispatcher = agent.compose(deadlineInterceptor({ clock: frozen }))
    async function* chunks() {
      yield Buffer.from('gen')
    }
    // undici takes an async iterable (its types list only a Readable).
    const body = chunks() as unknown as Readable
    const res = await request(target(), { dispatcher, method: 'POST', body })
    expect(await res.body.text()).toBe('got gen')
  })

  it("undici's own fetch() through it: its stream body goes with the retry, whole", async () => {
    const agent = cleanup.keep(new Agent({ connect: createConnector({ lookup: refusingFirst() }) }))
    const dispatcher = agent.compose(deadlineInterceptor({ clock: frozen }))
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          controller.enqueue(new TextEncoder().encode('web'))
          controller.close()
        },
      },
      { highWaterMark: 0 },
    )
    const init = { dispatcher, method: 'POST', body, duplex: 'half' }
    const res = await undiciFetch(target(), init as never)
    expect(await res.text()).toBe('got web')
  })
})

describe('deadlineInterceptor: what stays as it was', () => {
  it('refused twice, the call fails with the refused connect, its stream destroyed', async () => {
    const events = cleanup.record()
    const lookup: LookupFunction = (_h, _o, callback) => callback(null, '127.0.0.2', 4)
    const agent = cleanup.keep(new Agent({ connect: createConnector({ lookup }) }))
    const dispatcher = agent.compose(deadlineInterceptor({ clock: frozen }))
    const body = Readable.from([Buffer.from('x')])
    const error = await request(target(), { dispatcher, method: 'POST', body }).catch(
      (e: unknown) => e,
    )
    expect(error).toMatchObject({ code: 'CONNECT_FAILED' })
    expect(events.skipped).toMatchObject([{ attempt: 2, why: 'already-retried' }])
    expect(body.destroyed).toBe(true)
  })

  it('a body a redirect beneath us sent on an earlier hop is not sent again, generator or web stream', async () => {
    // undici's redirect interceptor composed inside ours: the first hop is
    // sent (the body read whole), the second's connect is refused at once.
    // Taken as unread, the generator's (or the web stream's) nothing was
    // sent again, empty, and the caller got a 200 for an empty POST.
    const lookup: LookupFunction = (host, _o, callback) =>
      callback(null, host === 'refused.test' ? '127.0.0.2' : '127.0.0.1', 4)
    for (const [name, body] of [
      [
        'generator',
        (async function* () {
          yield Buffer.from('gen')
        })(),
      ],
      ['web stream', new Blob(['web']).stream()],
    ] as const) {
      received.length = 0
      const events = cleanup.record()
      const agent = cleanup.keep(new Agent({ connect: createConnector({ lookup }) }))
      const dispatcher = agent.compose(
        interceptors.redirect({ maxRedirections: 2 }),
        deadlineInterceptor({ clock: frozen }),
      )
      const error = await request(`http://svc.test:${port}/redir`, {
        dispatcher,
        method: 'POST',
        body: body as unknown as Readable,
      }).catch((e: unknown) => e)
      expect({ error, received, skipped: events.skipped }, name).toMatchObject({
        error: { code: 'CONNECT_FAILED' },
        received: [`/redir ${name === 'generator' ? 'gen' : 'web'}`],
        skipped: [{ attempt: 1, why: 'body-not-replayable' }],
      })
    }
  })

  it('a Node stream already read from is not sent again (body-not-replayable)', async () => {
    const events = cleanup.record()
    const agent = cleanup.keep(new Agent({ connect: createConnector({ lookup: refusingFirst() }) }))
    const dispatcher = agent.compose(deadlineInterceptor({ clock: frozen }))
    const body = Readable.from([Buffer.from('a'), Buffer.from('b')])
    body.read()
    const error = await request(target(), { dispatcher, method: 'POST', body }).catch(
      (e: unknown) => e,
    )
    expect(error).toMatchObject({ code: 'CONNECT_FAILED' })
    expect(events.skipped).toMatchObject([{ attempt: 1, why: 'body-not-replayable' }])
  })
})
