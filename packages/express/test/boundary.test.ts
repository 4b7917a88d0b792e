import { once } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import net from 'node:net'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  expressChannels,
  type IngressEndMessage,
  type IngressExpireMessage,
} from '../src/index.js'
import { headAtDeadline } from './support/headAtDeadline.js'
import { pipelined, pipelinedGet } from './support/pipelined.js'
import { deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * Two things at the deadline's instant, put in one tick by a ManualClock
 * the handler advances itself. What reaches the client is read off a raw
 * socket: every status line on the wire, not what a client library makes
 * of it.
 */

const statusLines = (received: string) => received.match(/HTTP\/1\.1 \d+/g)

describe.each(majors)('the deadline and something else in the same tick ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it.each([
    {
      how: 'writeHead(200, headers): a stream whose first byte never came',
      head: (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' }),
    },
    {
      how: 'writeHead(200) with a Content-Length',
      head: (res: ServerResponse) =>
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' }),
    },
    { how: 'writeHead(204)', head: (res: ServerResponse) => res.writeHead(204) },
    // A coding the route labelled its own bytes with (a proxy relaying its
    // upstream's head), no wrapper of the writers in the way: no start
    // either, and the 504 goes out unlabelled. Before, any coding kept the
    // head: with a Content-Length the socket was destroyed (no answer, the
    // request pipelined behind lost), chunked an empty 200 labelled gzip.
    {
      how: 'writeHead(200) relaying a gzip head with a Content-Length',
      head: (res: ServerResponse) =>
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-encoding': 'gzip',
          'content-length': '2048',
        }),
    },
    {
      how: 'writeHead(200) relaying a gzip head, chunked',
      head: (res: ServerResponse) =>
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }),
    },
    {
      how: 'setHeader(Content-Encoding: br), then writeHead(200)',
      head: (res: ServerResponse) => {
        res.setHeader('Content-Encoding', 'br')
        res.writeHead(200)
      },
    },
  ])(
    'a head stored by $how and not sent yet gets the 504, and the connection carries the next request',
    async ({ head }) => {
      const ends = record<IngressEndMessage>(expressChannels.end.name)
      try {
        const { received, clock } = await headAtDeadline(major, head)
        await ends.count(2)
        expect(statusLines(received)).toEqual(['HTTP/1.1 504', 'HTTP/1.1 200'])
        const answer504 = received.slice(0, received.indexOf('HTTP/1.1 200'))
        expect(answer504.toLowerCase()).not.toContain('content-encoding')
        expect(received).toContain(
          '{"error":"deadline_exceeded","budgetMs":100,"elapsedMs":100,"slice":null}HTTP/1.1 200',
        )
        expect(received.endsWith('next')).toBe(true)
        expect(
          ends.messages.map((m) => [(m.req as IncomingMessage).url, m.outcome, m.statusCode]),
        ).toEqual([
          ['/first', 'expired', 504],
          ['/next', 'ok', 200],
        ])
        expect(clock.pendingTimers).toBe(0)
      } finally {
        ends.stop()
      }
    },
  )

  it('respond answers a head stored and not sent yet, in its own shape', async () => {
    const { received } = await headAtDeadline(
      major,
      (res) => res.writeHead(200, { 'content-type': 'text/event-stream' }),
      {
        respond: (_req, res) => {
          res.status(504).json({ code: 'too_slow' })
        },
      },
    )
    expect(statusLines(received)).toEqual(['HTTP/1.1 504', 'HTTP/1.1 200'])
    expect(received).toContain('{"code":"too_slow"}HTTP/1.1 200')
    // Nothing of the dropped head shapes it: not its reason phrase, not its content type.
    const head = received.slice(0, received.indexOf('\r\n\r\n'))
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 504 Gateway Timeout')
    expect(head).toMatch(/content-type: application\/json/i)
    expect(head).not.toMatch(/event-stream|transfer-encoding/i)
  })

  it('a head already flushed (flushHeaders) is a started stream: ended, not spliced with a 504', async () => {
    const { received } = await headAtDeadline(major, (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.flushHeaders()
    })
    expect(statusLines(received)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200'])
    // The trailer says the stream was cut, whoever's budget ran out (here
    // the server's own defaultMs): without it an empty 200 read as whole.
    expect(received).toContain(
      'Transfer-Encoding: chunked\r\n\r\n0\r\nx-deadline-expired: 1\r\n\r\nHTTP/1.1 200',
    )
  })

  it.each([
    {
      how: 'set with setHeader',
      write: (res: ServerResponse) => {
        res.setHeader('content-length', '4')
        res.write('ab')
        res.write(Buffer.from('cd'))
      },
    },
    {
      how: 'given to writeHead',
      write: (res: ServerResponse) => {
        res.writeHead(200, { 'Content-Length': '4' })
        res.write('abcd')
      },
    },
  ])(
    'a body written to the length it declared ($how), end() not called yet, is ended: the connection carries the next request',
    async ({ write }) => {
      const ends = record<IngressEndMessage>(expressChannels.end.name)
      try {
        const { received } = await headAtDeadline(major, write)
        await ends.count(2)
        // Before, the socket was destroyed under a whole answer: /next went unanswered.
        expect(statusLines(received)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200'])
        expect(received).toMatch(/\r\n\r\nabcdHTTP\/1\.1 200/)
        expect(received.endsWith('next')).toBe(true)
        expect(ends.messages.map((m) => [m.outcome, m.statusCode])).toEqual([
          ['expired', 200],
          ['ok', 200],
        ])
      } finally {
        ends.stop()
      }
    },
  )

  it('so is one pipelined behind another, that wrote its whole length once its turn came', async () => {
    const clock = new ManualClock()
    const app = major.app()
    app.use(deadline({ clock, defaultMs: 100, reserveMs: 0 }))
    const ahead = deferred()
    app.get('/ahead', async (_req, res) => {
      await ahead.promise
      res.send('ahead')
    })
    app.get('/first', (_req, res) => {
      res.once('socket', () => {
        res.writeHead(200, { 'Content-Length': '4' })
        res.write('abcd')
        clock.advance(100) // /first's deadline alone: /ahead has 1000 ms
      })
      ahead.resolve() // queued behind /ahead, which now answers
    })
    app.get('/next', (_req, res) => {
      res.send('next')
    })
    server = await listen(app)
    const socket = await pipelined(
      server,
      `${pipelinedGet('/ahead', 1000)}${pipelinedGet('/first')}GET /next HTTP/1.1\r\nHost: x\r\n\r\n`,
      [],
    )
    const received = await socket.text()
    expect(statusLines(received)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200'])
    expect(received).toMatch(/\r\n\r\nabcdHTTP\/1\.1 200/)
    expect(received.endsWith('next')).toBe(true)
  })

  it('a body short of the length it declared is still cut: the connection goes with it', async () => {
    const { received } = await headAtDeadline(major, (res) => {
      res.writeHead(200, { 'Content-Length': '4' })
      res.write('abc')
    })
    // Destroyed: /next is never answered.
    expect(received).not.toContain('next')
  })

  it('so is one whose head holds a character past ASCII, short by exactly its extra bytes: the head has no one length on the wire', async () => {
    const { received } = await headAtDeadline(major, (res) => {
      // Joined to a first string chunk, the head goes out as UTF-8: 'é' is
      // two bytes, and the count came to 4 with 'abc'. Ended as whole, the
      // next answer's 'H' became this body's fourth byte.
      res.writeHead(200, { 'Content-Length': '4', 'X-Name': 'café' })
      res.write('abc')
    })
    expect(received).not.toContain('next')
  })
  it.each([
    {
      how: "its FIN (the socket's 'end': Node ends the socket, the response's close comes a turn later)",
      when: 'end',
      leave: (socket: net.Socket) => socket.end(),
    },
    {
      how: "its reset (the request's 'aborted', before the response's close)",
      when: 'aborted',
      leave: (socket: net.Socket) => socket.resetAndDestroy(),
    },
  ])(
    'the client leaving by $how as the deadline expires: client-closed, no 504 for nobody',
    async ({ when, leave }) => {
      const clock = new ManualClock()
      const expiries: IngressExpireMessage[] = []
      const app = major.app()
      app.use(deadline({ clock, defaultMs: 100, reserveMs: 0, onExpire: (m) => expiries.push(m) }))
      let reason: unknown
      app.get('/first', (req, res) => {
        const expireNow = () => {
          clock.advance(100)
          reason = req.deadline.reason
        }
        if (when === 'end') req.socket.once('end', expireNow)
        else req.once('aborted', expireNow)
        res.write('') // nothing yet: the handler waits on its model
      })
      server = await listen(app)
      const ends = record<IngressEndMessage>(expressChannels.end.name)
      const closed = record(expressChannels.clientClosed.name)
      const expired = record<IngressExpireMessage>(expressChannels.expire.name)
      try {
        const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1')
        socket.on('error', () => {})
        await once(socket, 'connect')
        socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\n')
        await once(socket, 'data') // the handler runs
        leave(socket)
        await ends.count(1)
        expect(ends.messages.map((m) => m.outcome)).toEqual(['client-closed'])
        expect(closed.messages).toHaveLength(1)
        expect(expired.messages).toEqual([])
        expect(expiries).toEqual([])
        // Aborted all the same (by its own timer, the expiry that came with the departure).
        expect(reason).toBeDefined()
        expect(clock.pendingTimers).toBe(0)
      } finally {
        ends.stop()
        closed.stop()
        expired.stop()
      }
    },
  )

  it("strict refusing a request whose client's FIN came while a middleware ahead worked: client-closed, no 400 to nobody", async () => {
    const app = major.app()
    // The middleware ahead is still working when the client's FIN arrives.
    app.use((req, _res, next) => {
      req.socket.once('end', () => next())
    })
    app.use(deadline({ clock: new ManualClock(), strict: true }))
    app.get('/first', (_req, res) => {
      res.send('never')
    })
    server = await listen(app)
    const ends = record<IngressEndMessage>(expressChannels.end.name)
    const closed = record(expressChannels.clientClosed.name)
    try {
      const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1')
      socket.on('error', () => {})
      await once(socket, 'connect')
      socket.end('GET /first HTTP/1.1\r\nHost: x\r\nx-deadline-remaining-ms: soon\r\n\r\n')
      await ends.count(1)
      expect(ends.messages.map((m) => m.outcome)).toEqual(['client-closed'])
      expect(closed.messages).toHaveLength(1)
    } finally {
      ends.stop()
      closed.stop()
    }
  })

  it("a request arriving expired whose client's FIN came while a middleware ahead worked: client-closed, no 504 to nobody, handler not run", async () => {
    const app = major.app()
    app.use((req, _res, next) => {
      req.socket.once('end', () => next())
    })
    app.use(deadline({ clock: new ManualClock() }))
    let ran = false
    app.get('/first', (_req, res) => {
      ran = true
      res.send('never')
    })
    server = await listen(app)
    const ends = record<IngressEndMessage>(expressChannels.end.name)
    const expired = record<IngressExpireMessage>(expressChannels.expire.name)
    try {
      const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1')
      socket.on('error', () => {})
      await once(socket, 'connect')
      socket.end('GET /first HTTP/1.1\r\nHost: x\r\nx-deadline-remaining-ms: 0\r\n\r\n')
      await ends.count(1)
      expect(ends.messages.map((m) => m.outcome)).toEqual(['client-closed'])
      expect(expired.messages).toEqual([])
      expect(ran).toBe(false)
    } finally {
      ends.stop()
      expired.stop()
    }
  })
})
