import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  expressChannels,
  type IngressEndMessage,
  type IngressLateWriteMessage,
} from '../src/index.js'
import { client, listen, majors, type Running, record } from './support/servers.js'

// A handler that reacts to its signal (or a catch block) often assigns the
// status rather than calling a writer: `res.statusCode = 500`. After the 504
// that assignment reached nothing on the wire, but every reader of the
// response's status at its end — our end event, a request logger, an HTTP
// span — reported a 500 that was never sent.

describe.each(majors)('a status assigned after the 504 ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('is swallowed and reported: the response still reads as the 504 that went out', async () => {
    const app = major.app()
    const late: IngressLateWriteMessage[] = []
    let seen: { statusCode: number; statusMessage: string } | undefined
    // A fixed reserve: the adaptive one could answer these small budgets on arrival.
    app.use(deadline({ reserveMs: 10, onLateWrite: (event) => late.push(event) }))
    app.get('/slow', (req, res) => {
      req.deadline.signal.addEventListener('abort', () => {
        res.statusCode = 500
        res.statusMessage = 'Internal Server Error'
        seen = { statusCode: res.statusCode, statusMessage: res.statusMessage }
      })
    })
    server = await listen(app)
    const ends = record<IngressEndMessage>(expressChannels.end.name)
    const res = await request(`${server.url}/slow`, {
      headers: { 'x-deadline-remaining-ms': '60' },
      dispatcher: client({ connections: 1 }),
    })
    await res.body.text()
    await ends.count(1)
    ends.stop()

    expect(res.statusCode).toBe(504)
    expect(ends.messages.map((m) => m.statusCode)).toEqual([504])
    expect(seen).toEqual({ statusCode: 504, statusMessage: 'Gateway Timeout' })
    expect(late.map((e) => e.method)).toEqual(['statusCode', 'statusMessage'])
  })

  it('assigning the status that already went out is no late write', async () => {
    const app = major.app()
    const late: IngressLateWriteMessage[] = []
    let seen: { statusCode: number; statusMessage: string } | undefined
    app.use(deadline({ reserveMs: 10, onLateWrite: (event) => late.push(event) }))
    app.get('/slow', (req, res) => {
      req.deadline.signal.addEventListener('abort', () => {
        // What a handler's own timeout path writes: the 504 that was sent.
        res.statusCode = 504
        res.statusMessage = 'Gateway Timeout'
        seen = { statusCode: res.statusCode, statusMessage: res.statusMessage }
        // A different value is still a late write.
        res.statusMessage = 'Timed Out'
      })
    })
    server = await listen(app)
    const ends = record<IngressEndMessage>(expressChannels.end.name)
    const res = await request(`${server.url}/slow`, {
      headers: { 'x-deadline-remaining-ms': '60' },
      dispatcher: client({ connections: 1 }),
    })
    await res.body.text()
    await ends.count(1)
    ends.stop()

    expect(res.statusCode).toBe(504)
    expect(seen).toEqual({ statusCode: 504, statusMessage: 'Gateway Timeout' })
    expect(late.map((e) => e.method)).toEqual(['statusMessage'])
  })

  it('a response that ends normally keeps its status assignable', async () => {
    const app = major.app()
    app.use(deadline({ reserveMs: 10 }))
    app.get('/ok', (_req, res) => {
      res.statusCode = 201
      res.end('made')
    })
    server = await listen(app)
    const res = await request(`${server.url}/ok`, { dispatcher: client() })
    expect(await res.body.text()).toBe('made')
    expect(res.statusCode).toBe(201)
  })
})
