import type { Socket } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest'
import { deadline, type IngressEndMessage, type IngressExpireMessage } from '../src/index.js'
import { pipelined, pipelinedGet } from './support/pipelined.js'
import { aborted, deferred, listen, majors, type Running, record } from './support/servers.js'

// What the adaptive reserve learns from: spied on, so the test reads what was
// sampled, not a reserve figure the machine's load would move.
const sampled = vi.hoisted(() => ({ answers: [] as number[] }))
vi.mock('@hourglass/core', async (importOriginal) => {
  const core = await importOriginal<typeof import('@hourglass/core')>()
  return {
    ...core,
    recordAnswerLateness: (ms: number, at?: number) => {
      sampled.answers.push(ms)
      core.recordAnswerLateness(ms, at)
    },
  }
})

/**
 * A response queued behind another pipelined response on its connection has
 * no socket until the ones ahead are done. Its deadline may expire while it
 * waits: the wait is the answer ahead's, not a late timer and not a client
 * that stopped reading.
 */
describe.each(majors)('a pipelined response queued when its deadline expires ($name)', (major) => {
  const running: Running[] = []
  const sockets: Socket[] = []
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy()
    await Promise.all(running.splice(0).map((s) => s.close()))
    sampled.answers.length = 0
  })

  const pipeline = (server: Running, data: string) => pipelined(server, data, sockets)
  const get = pipelinedGet

  it('its 504 does not feed the adaptive reserve: the wait for its turn is no timer lateness', async () => {
    const gate = deferred()
    const expires = record<IngressExpireMessage>('hourglass:ingress:expire')
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const app = major.app()
    // A fixed reserve: the adaptive one, grown on a loaded machine, could
    // answer a short budget on arrival, which is never sampled.
    app.use(deadline({ defaultMs: 30_000, reserveMs: 0 }))
    app.get(
      '/slow',
      major.route(async (_req, res) => {
        await gate.promise
        res.json({ slow: true })
      }),
    )
    app.get('/hang', () => {
      // Never answers: the middleware's own timer writes the 504.
    })
    const server = await listen(app)
    running.push(server)
    const connection = await pipeline(server, get('/slow') + get('/hang', 200).repeat(2))
    // Both queued 504s are written (and wait for the socket) before the answer ahead is.
    await expires.count(2)
    expect(expires.messages.map((m) => [m.stage, m.action])).toEqual([
      ['handler', '504'],
      ['handler', '504'],
    ])
    gate.resolve()
    await ends.count(3)
    const text = await connection.text()
    expect([...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual(['200', '504', '504'])
    expect(sampled.answers, 'queued 504s sampled as late answers').toEqual([])

    // Control: a 504 that had its socket is still sampled.
    const alone = await pipeline(server, get('/hang', 200))
    await ends.count(4)
    await alone.text()
    expect(sampled.answers).toHaveLength(1)
    expires.stop()
    ends.stop()
  })

  it('a head stored after a 103 Early Hints is no start: it gets its 504 after the hints, a cancelled one too', async () => {
    const gate = deferred()
    const expires = record<IngressExpireMessage>('hourglass:ingress:expire')
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    // However the test ends: unanswered, the cancelled one held the
    // connection, whose close would end these requests in the next test.
    onTestFinished(async () => {
      for (const socket of sockets.splice(0)) socket.destroy()
      await ends.count(3)
      expires.stop()
      ends.stop()
    })
    const app = major.app()
    app.use(deadline({ defaultMs: 30_000, reserveMs: 0 }))
    app.get(
      '/slow',
      major.route(async (_req, res) => {
        await gate.promise
        res.json({ slow: true })
      }),
    )
    app.get(
      '/hinted',
      major.route(async (req, res) => {
        // Queued: Node buffers the 103 in the response's own output, where
        // it read as body written — a stored head taken for a started
        // stream, ended: the caller read an empty 200.
        res.writeEarlyHints({ link: '</app.css>; rel=preload; as=style' })
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        await aborted(req.deadline.signal)
      }),
    )
    app.get('/stopped', (req, res) => {
      res.writeEarlyHints({ link: '</app.js>; rel=preload; as=script' })
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      // Its work stopped, no answer yet: the 504 is still due at the
      // deadline. Taken for a started stream, none was: the caller waited
      // until it gave up.
      req.deadline.cancel(new Error('upstream gone'))
    })
    const server = await listen(app)
    running.push(server)
    const connection = await pipeline(
      server,
      get('/slow') + get('/hinted', 100) + get('/stopped', 100),
    )
    await expires.count(2)
    gate.resolve()
    await ends.count(3)
    const text = await connection.text()
    expect([...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual([
      '200',
      '103',
      '504',
      '103',
      '504',
    ])
    expect(text).toContain('Link: </app.css>; rel=preload; as=style')
    expect(text).toContain('{"error":"deadline_exceeded","budgetMs":100,')
    expect(text).not.toContain('text/event-stream')
    expect(expires.messages.map((m) => m.action)).toEqual(['504', '504'])
    expect(ends.messages.map((m) => [m.statusCode, m.outcome])).toEqual([
      [200, 'ok'],
      [504, 'expired'],
      [504, 'expired'],
    ])
  })

  it("respond's res.json() after a 103 Early Hints goes out after the hints, and so does the route's own: the connection carries the next answer", async () => {
    const clock = new ManualClock()
    const gate = deferred()
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    onTestFinished(() => ends.stop())
    const hinted = deferred()
    const app = major.app()
    app.use(
      deadline({
        defaultMs: 100,
        reserveMs: 0,
        clock,
        respond: (_req, res) => {
          res.status(504).json({ code: 'too_slow' })
        },
      }),
    )
    app.get('/slow', (_req, res) => {
      void gate.promise.then(() => res.json({ slow: true }))
    })
    // Queued behind /slow: Node buffers each 103 in the response's own
    // output. A head sent with a Buffer body (res.json's) was put first in
    // it, ahead of the hints: its Content-Length counted the 103 as body.
    app.get('/stopped', (_req, res) => {
      res.writeEarlyHints({ link: '</app.css>; rel=preload; as=style' })
      hinted.resolve()
    })
    app.get('/answered', (_req, res) => {
      res.writeEarlyHints({ link: '</app.js>; rel=preload; as=script' })
      res.json({ answered: true })
    })
    app.get('/next', (_req, res) => {
      res.json({ next: true })
    })
    const server = await listen(app)
    running.push(server)
    const connection = await pipeline(
      server,
      get('/slow', 10_000) + get('/stopped') + get('/answered', 10_000) + get('/next', 10_000),
    )
    await hinted.promise
    await new Promise<void>((resolve) => setImmediate(resolve))
    clock.advance(100) // /stopped's deadline: respond's answer, queued behind /slow
    gate.resolve()
    await ends.count(4)
    const text = await connection.text()
    expect([...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual([
      '200',
      '103',
      '504',
      '103',
      '200',
      '200',
    ])
    expect(text).toMatch(
      /as=style\r\n\r\nHTTP\/1\.1 504 [\s\S]*\r\n\r\n\{"code":"too_slow"\}HTTP\/1\.1 103 /,
    )
    expect(text).toMatch(
      /as=script\r\n\r\nHTTP\/1\.1 200 [\s\S]*\r\n\r\n\{"answered":true\}HTTP\/1\.1 200 /,
    )
    expect(text.endsWith('{"next":true}')).toBe(true)
    expect(ends.messages.map((m) => [m.statusCode, m.outcome])).toEqual([
      [200, 'ok'],
      [504, 'expired'],
      [200, 'ok'],
      [200, 'ok'],
    ])
  })

  it('a stream past the high-water mark is ended cleanly, not destroyed with the shared connection', async () => {
    const gate = deferred()
    const expires = record<IngressExpireMessage>('hourglass:ingress:expire')
    const ends = record<IngressEndMessage>('hourglass:ingress:end')
    const app = major.app()
    // A fixed reserve: the adaptive one, grown on a loaded machine, could
    // answer a short budget on arrival, which is never sampled.
    app.use(deadline({ defaultMs: 30_000, reserveMs: 0 }))
    app.get(
      '/slow',
      major.route(async (_req, res) => {
        await gate.promise
        res.json({ slow: true })
      }),
    )
    app.get(
      '/big',
      major.route(async (req, res) => {
        res.setHeader('content-type', 'application/x-ndjson')
        // Buffered by Node while the response waits for its socket: past the
        // high-water mark, so `writableNeedDrain` is true.
        res.write(`${'x'.repeat(100_000)}\n`)
        await aborted(req.deadline.signal)
      }),
    )
    app.get('/fast', (_req, res) => {
      res.json({ fast: true })
    })
    const server = await listen(app)
    running.push(server)
    const connection = await pipeline(server, get('/slow') + get('/big', 200) + get('/fast'))
    await expires.count(1)
    gate.resolve()
    await ends.count(3)
    const text = await connection.text()
    // Destroyed, the connection carried nothing at all: not even the answer ahead.
    expect([...text.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1])).toEqual(['200', '200', '200'])
    expect(text).toContain(`${'x'.repeat(100_000)}\n\r\n0\r\nx-deadline-expired: 1\r\n\r\n`)
    expect(text).toContain('{"fast":true}')
    expect(ends.messages.map((m) => m.outcome)).toEqual(['ok', 'expired', 'ok'])
    expires.stop()
    ends.stop()
  })
})
