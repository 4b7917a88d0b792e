import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { type AddressInfo, connect, type Socket } from 'node:net'
import { pipeline, Transform } from 'node:stream'
import { createGzip } from 'node:zlib'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { majors } from './support/servers.js'

/**
 * `Expect: 100-continue`: the client holds its body back until the server
 * says `100 Continue`. Node says it on arrival, before any middleware, unless
 * the server listens to `checkContinue`; with the app as that listener,
 * `deadline()` says it once the request has budget, so a request that
 * arrived with its budget spent gets its 504 without uploading for it.
 */
let server: Server | undefined
afterEach(async () => {
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

async function start(): Promise<{ port: number; uploads: () => number }> {
  const app = express()
  let uploads = 0
  app.use(deadline({ reserveMs: 10 }))
  // An auth check ahead of the body's reader: a refusal needs no upload.
  app.use((req, res, next) => {
    if (req.headers.authorization === 'no') res.status(401).json({ error: 'unauthorized' })
    else next()
  })
  app.post('/', (req, res) => {
    uploads++
    let length = 0
    req.on('data', (chunk: Buffer) => {
      length += chunk.length
    })
    req.on('end', () => res.json({ length }))
  })
  server = createServer(app)
  server.on('checkContinue', app)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { port: (server.address() as AddressInfo).port, uploads: () => uploads }
}

/** Sends the head of a POST with `Expect: 100-continue`; resolves with what the server writes first. */
function head(
  port: number,
  budgetMs: number,
  extra = '',
): { socket: Socket; first: Promise<string> } {
  const socket = connect(port, '127.0.0.1')
  socket.write(
    'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n' +
      `x-deadline-remaining-ms: ${budgetMs}\r\n${extra}\r\n`,
  )
  socket.setEncoding('latin1')
  const first = once(socket, 'data').then(([data]) => String(data))
  return { socket, first }
}

describe('Expect: 100-continue with the app as the server`s checkContinue listener', () => {
  it('a spent budget gets its 504 at once, with no 100 Continue: the body is never asked for', async () => {
    const { port, uploads } = await start()
    const { socket, first } = head(port, 1)
    const answer = await first
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 504 Gateway Timeout')
    expect(answer).not.toContain('100 Continue')
    // Node closes the connection after the answer: the body it never asked for is not awaited.
    await once(socket, 'close')
    expect(uploads()).toBe(0)
  })

  it('a middleware that refuses before anything reads the body (an auth check) answers with no 100 Continue: no upload for a 401', async () => {
    const { port, uploads } = await start()
    const { socket, first } = head(port, 5000, 'Authorization: no\r\n')
    const answer = await first
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized')
    expect(answer).not.toContain('100 Continue')
    await once(socket, 'close')
    expect(uploads()).toBe(0)
  })

  it('a request with budget is told 100 Continue, then uploads and is answered', async () => {
    const { port, uploads } = await start()
    const { socket, first } = head(port, 5000)
    expect(await first).toBe('HTTP/1.1 100 Continue\r\n\r\n')
    const answer = once(socket, 'data').then(([data]) => String(data))
    socket.write('hello')
    const text = await answer
    expect(text.split('\r\n')[0]).toBe('HTTP/1.1 200 OK')
    expect(text).toContain('{"length":5}')
    expect(uploads()).toBe(1)
    socket.destroy()
  })
})

describe('Expect: 100-continue on a request pipelined behind another', () => {
  it('the 100 Continue deadline() writes while it waits its turn goes out ahead of the answer, res.json() included', async () => {
    const app = express()
    let release = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let answered = () => {}
    const early = new Promise<void>((resolve) => {
      answered = resolve
    })
    app.use(deadline({ reserveMs: 10 }))
    app.get('/slow', (_req, res) => {
      void released.then(() => res.send('slow'))
    })
    // Drains its body (deadline() writes the 100, queued behind /slow's
    // answer), then answers before it has come. res.json's head goes with a
    // Buffer body, which Node put first in the queued response's buffer:
    // ahead of the 100, read by the client as the answer's body.
    app.post('/early', (req, res) => {
      req.resume()
      setImmediate(() => {
        res.json({ early: true })
        answered()
      })
    })
    server = createServer(app)
    server.on('checkContinue', app)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1')
    socket.setEncoding('latin1')
    let text = ''
    socket.on('data', (data: string) => {
      text += data
    })
    await once(socket, 'connect')
    socket.write(
      'GET /slow HTTP/1.1\r\nHost: x\r\n\r\n' +
        'POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n',
    )
    await early
    release()
    socket.write('hello')
    await once(socket, 'close')
    expect([...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual(['200', '100', '200'])
    expect(text).toMatch(/slowHTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/)
    expect(text.endsWith('\r\n\r\n{"early":true}')).toBe(true)
  })
})

/** Reads from `socket` until a whole head has come; resolves with everything read by then. */
function readHead(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    const onData = (data: string) => {
      text += data
      if (!text.includes('\r\n\r\n')) return
      socket.off('data', onData)
      socket.off('close', onClose)
      resolve(text)
    }
    const onClose = () => reject(new Error(`closed after ${JSON.stringify(text)}`))
    socket.on('data', onData)
    socket.on('close', onClose)
  })
}

describe.each(majors)(
  'Expect: 100-continue answered by Express`s final handler ($name)',
  (major) => {
    // A real (wall-clock) budget the answers below must come well within:
    // at once, not at the deadline, even on a loaded machine.
    const BUDGET_MS = 10_000

    async function startMajor(): Promise<{ port: number; uploads: () => number }> {
      const app = major.app()
      let uploads = 0
      app.use(deadline({ reserveMs: 10 }))
      app.use((req, res, next) => {
        if (req.headers.authorization === 'no') res.status(401).json({ error: 'unauthorized' })
        else next()
      })
      // Refused before its body is read, by the error handler Express ends with.
      app.post('/refused', (_req, _res, next) => {
        next(Object.assign(new Error('unauthorized'), { status: 401, expose: true }))
      })
      app.post('/', (req, res) => {
        uploads++
        req.resume()
        req.on('end', () => res.json({ ok: true }))
      })
      // A streaming route that writes its head before it reads the body.
      app.post('/upper', (req, res) => {
        uploads++
        res.writeHead(200, { 'content-type': 'text/plain' })
        const upper = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            done(null, chunk.toString('latin1').toUpperCase())
          },
        })
        pipeline(req, upper, res, () => {})
      })
      // The same, gzipping the upload back: a coding chosen with its head.
      app.post('/gzip', (req, res) => {
        uploads++
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' })
        pipeline(req, createGzip(), res, () => {})
      })
      server = createServer(app)
      server.on('checkContinue', app)
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      return { port: (server.address() as AddressInfo).port, uploads: () => uploads }
    }

    /**
     * POSTs `path` with `Expect: 100-continue` and a budget, uploading its
     * body only once told `100 Continue`, as Node's client and curl do;
     * resolves with the final answer's head and how long it took.
     */
    async function post(
      port: number,
      path: string,
      extra = '',
    ): Promise<{ continued: boolean; answer: string; ms: number }> {
      const socket = connect(port, '127.0.0.1')
      socket.setEncoding('latin1')
      const started = Date.now()
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n` +
          `x-deadline-remaining-ms: ${BUDGET_MS}\r\n${extra}\r\n`,
      )
      let answer = await readHead(socket)
      const continued = answer.startsWith('HTTP/1.1 100 Continue\r\n\r\n')
      if (continued) {
        answer = answer.slice('HTTP/1.1 100 Continue\r\n\r\n'.length)
        if (!answer.includes('\r\n\r\n')) {
          const rest = readHead(socket)
          socket.write('hello')
          answer += await rest
        }
      }
      const ms = Date.now() - started
      socket.destroy()
      return { continued, answer, ms }
    }

    it('an unknown path gets Express`s 404 at once, not a 504 at the deadline: its drain of the body is told 100 Continue', async () => {
      const { port, uploads } = await startMajor()
      const { continued, answer, ms } = await post(port, '/nope')
      expect(continued).toBe(true)
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found')
      expect(answer.toLowerCase()).not.toContain('x-deadline-expired')
      expect(ms).toBeLessThan(BUDGET_MS)
      expect(uploads()).toBe(0)
    })

    it('a next(error) with a status before the body is read gets that status at once, not a 504 at the deadline', async () => {
      const { port, uploads } = await startMajor()
      const { continued, answer, ms } = await post(port, '/refused')
      expect(continued).toBe(true)
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized')
      expect(answer.toLowerCase()).not.toContain('x-deadline-expired')
      expect(ms).toBeLessThan(BUDGET_MS)
      expect(uploads()).toBe(0)
    })

    it('a handler that drains the body with resume() is told 100 Continue and answers', async () => {
      const { port, uploads } = await startMajor()
      const { continued, answer } = await post(port, '/')
      expect(continued).toBe(true)
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK')
      expect(uploads()).toBe(1)
    })

    it('a route that wrote its head with writeHead() before reading the body is told 100 Continue: its 200, not a 504 at the deadline', async () => {
      const { port, uploads } = await startMajor()
      for (const path of ['/upper', '/gzip']) {
        const { continued, answer, ms } = await post(port, path)
        expect(continued, path).toBe(true)
        expect(answer.split('\r\n')[0], path).toBe('HTTP/1.1 200 OK')
        expect(answer.toLowerCase(), path).not.toContain('x-deadline-expired')
        expect(ms, path).toBeLessThan(BUDGET_MS)
      }
      expect(uploads()).toBe(2)
    })

    it('a middleware that answers before anything reads the body still answers with no 100 Continue', async () => {
      const { port, uploads } = await startMajor()
      const { continued, answer } = await post(port, '/', 'Authorization: no\r\n')
      expect(continued).toBe(false)
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized')
      expect(uploads()).toBe(0)
    })
  },
)
