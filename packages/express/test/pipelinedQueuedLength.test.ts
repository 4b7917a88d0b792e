import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Response } from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, type IngressEndMessage, type IngressExpireMessage } from '../src/index.js'
import { pipelined, pipelinedGet } from './support/pipelined.js'
import { aborted, deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * A pipelined response queued behind another on its connection, that
 * declared its length and wrote part of its body when its deadline ran out
 * (a `res.sendFile` still reading its file): nothing of it has left the
 * process — Node holds its head and body until the answer ahead is done.
 * It was destroyed as a response cut short on the wire: when its turn came
 * the destroy took the shared connection, its caller got no answer at all,
 * and every answer pipelined after it was lost. It gets its 504 instead.
 */
describe.each(majors)('a queued pipelined response with a declared length ($name)', (major) => {
  const running: Running[] = []
  const sockets: Socket[] = []
  const dirs: string[] = []
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy()
    await Promise.all(running.splice(0).map((s) => s.close()))
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  const pipeline = (server: Running, data: string) => pipelined(server, data, sockets)
  const get = pipelinedGet

  const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])

  async function serve(partial: (res: Response, signal: AbortSignal) => unknown, respond = false) {
    const gate = deferred()
    const app = major.app()
    app.use(
      deadline({
        defaultMs: 30_000,
        reserveMs: 0,
        ...(respond && {
          respond: (_req, res) => {
            res.status(504).json({ error: { code: 'deadline_exceeded' } })
          },
        }),
      }),
    )
    app.get(
      '/slow',
      major.route(async (_req, res) => {
        await gate.promise
        res.json({ slow: true })
      }),
    )
    app.get(
      '/partial',
      major.route(async (req, res) => partial(res, req.deadline.signal)),
    )
    app.get('/fast', (_req, res) => {
      res.json({ fast: true })
    })
    const server = await listen(app)
    running.push(server)
    return { server, gate }
  }

  it('gets its 504, and the answers around it are still served on the connection', async () => {
    const expires = record<IngressExpireMessage>('hourglass:ingress:expire')
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const { server, gate } = await serve(async (res, signal) => {
      res.setHeader('content-type', 'text/plain')
      res.setHeader('content-length', 10)
      res.write('hello')
      await aborted(signal)
    })
    const connection = await pipeline(server, get('/slow') + get('/partial', 100) + get('/fast'))
    await expires.count(1)
    gate.resolve()
    await ends.count(3)
    const text = await connection.text()
    // Destroyed: '200' for /slow at most, then the connection closed.
    expect(statuses(text)).toEqual(['200', '504', '200'])
    expect(text).toContain('{"error":"deadline_exceeded","budgetMs":100,')
    expect(text).not.toContain('hello')
    expect(text).toContain('{"fast":true}')
    expect(expires.messages.map((m) => m.action)).toEqual(['504'])
    expect(
      ends.messages.map((m) => [(m.req as { url?: string }).url, m.statusCode, m.outcome]),
    ).toEqual([
      ['/slow', 200, 'ok'],
      ['/partial', 504, 'expired'],
      ['/fast', 200, 'ok'],
    ])
    expires.stop()
    ends.stop()
  })

  it('a res.sendFile still reading its file gets respond’s answer in its place', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hourglass-queued-'))
    dirs.push(dir)
    // Larger than Node buffers for a queued response before pushing back.
    writeFileSync(join(dir, 'big.bin'), Buffer.alloc(4 * 1024 * 1024, 'b'))
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const expires = record<IngressExpireMessage>('hourglass:ingress:expire')
    const { server, gate } = await serve((res) => {
      res.sendFile(join(dir, 'big.bin'))
    }, true)
    const connection = await pipeline(server, get('/slow') + get('/partial', 100) + get('/fast'))
    await expires.count(1)
    gate.resolve()
    await ends.count(3)
    const text = await connection.text()
    expect(statuses(text)).toEqual(['200', '504', '200'])
    expect(text).toContain('{"error":{"code":"deadline_exceeded"}}')
    expect(text).not.toContain('bbbb')
    expect(text).toContain('{"fast":true}')
    expect(ends.messages.map((m) => m.outcome)).toEqual(['ok', 'expired', 'ok'])
    ends.stop()
    expires.stop()
  })
  it('keeps the 100 Continue it wrote ahead of it: the client holding its body back still sends it', async () => {
    const gate = deferred()
    const expires = record<IngressExpireMessage>('hourglass:ingress:expire')
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const app = major.app()
    app.use(deadline({ defaultMs: 30_000, reserveMs: 0 }))
    app.get(
      '/slow',
      major.route(async (_req, res) => {
        await gate.promise
        res.json({ slow: true })
      }),
    )
    app.post(
      '/upload',
      major.route(async (req, res) => {
        // Reading the body: deadline() writes the 100 Continue, queued too.
        req.on('data', () => {})
        res.setHeader('content-length', 10)
        res.write('hello')
        await aborted(req.deadline.signal)
      }),
    )
    app.get('/fast', (_req, res) => {
      res.json({ fast: true })
    })
    const server = createServer(app)
    server.on('checkContinue', app)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    running.push({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      connections: [],
      async close() {
        server.closeAllConnections()
        server.close()
        await once(server, 'close')
      },
    })
    const connection = await pipeline(
      running.at(-1) as Running,
      `${get('/slow')}POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\nx-deadline-remaining-ms: 100\r\n\r\n`,
    )
    await expires.count(1)
    gate.resolve()
    await ends.count(2)
    connection.write(`abcde${get('/fast')}`)
    await ends.count(3)
    const text = await connection.text()
    expect(statuses(text)).toEqual(['200', '100', '504', '200'])
    expect(text).toContain('{"fast":true}')
    expires.stop()
    ends.stop()
  })
})
