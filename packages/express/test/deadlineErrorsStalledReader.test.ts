import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { DeadlineExceededError, ManualClock, markExpiryOf } from '@hourglass/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { RESPOND_END_GRACE_MS } from '../src/watchEnd.js'
import { LAST_CHUNK } from './support/lastChunk.js'
import { readAll } from './support/readAll.js'
import { deferred, listen, majors, type Running } from './support/servers.js'

/**
 * `deadlineErrors()` answering a `DeadlineExceededError` passed to `next` by
 * a stream already started (a step of the stream's own ran out) with no
 * `deadline()` to end it, or one that only observes: it ends the stream
 * itself. To a client that stopped reading with less than the socket's
 * high-water mark waiting in Node (an SSE feed of 8 KB events), no write
 * waited for 'drain', so the stream was ended, not destroyed: an end that
 * could never leave, the socket open for good (`server.timeout` is 0).
 * `deadline()` destroys such a stream a grace (1 s) after its end
 * (`test/stalledReaderSmallWrites.test.ts`); so does `deadlineErrors()` now.
 * The grace is a system timer (nothing else has a clock): the tests fake
 * `setTimeout` alone and move it by hand. Left real, the second test raced
 * the client's reading of megabytes of buffered events against that 1 s
 * timer, a race a loaded CPU could lose (the stream cut, not cleanly ended).
 */
const chains = [
  ['without deadline()', false],
  ["with deadline({ mode: 'observe' })", true],
] as const

describe.each(majors)(
  'deadlineErrors() ending a stream whose client stopped reading ($name)',
  (major) => {
    let server: Running | undefined
    let client: Socket | undefined
    afterEach(async () => {
      vi.useRealTimers()
      client?.destroy()
      await server?.close()
      server = undefined
    })

    async function stalledStream(observe: boolean) {
      // Only the grace's timer: sockets, immediates and ticks stay real.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
      const app = major.app()
      // Whether a write waits for 'drain' once the OS buffers are full.
      const full = deferred<boolean>()
      // A clock that never moves: the request's own deadline never fires.
      if (observe) app.use(deadline({ mode: 'observe', clock: new ManualClock() }))
      app.get(
        '/events',
        major.route(async (req, res, next) => {
          res.setHeader('content-type', 'text/event-stream')
          const event = `data: ${'x'.repeat(8 * 1024)}\n\n`
          // Until the OS takes no more: one event then waits in Node's buffer,
          // below the high-water mark, so the write returned true.
          do {
            res.write(event)
            await new Promise((resolve) => setImmediate(resolve))
          } while (res.writableLength === 0)
          full.resolve(res.writableNeedDrain)
          // A step of the stream's own ran out (the request's line's, under deadline()).
          const error = new DeadlineExceededError({
            budgetMs: 1000,
            elapsedMs: 1000,
            slice: 'feed',
          })
          next(req.deadline ? markExpiryOf(error, req.deadline) : error)
        }),
      )
      app.get('/next', (_req, res) => {
        res.send('next')
      })
      app.use(deadlineErrors())
      server = await listen(app)
      const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
      client = socket
      socket.on('error', () => {})
      await once(socket, 'connect')
      socket.pause() // reads nothing
      // A budget of the caller's: under deadline()'s own defaultMs the end
      // would carry no `x-deadline-expired` trailer.
      socket.write(
        'GET /events HTTP/1.1\r\nhost: 127.0.0.1\r\nx-deadline-remaining-ms: 2000\r\n\r\n',
      )
      // The case at hand: nothing says the client stopped reading.
      expect(await full.promise).toBe(false)
      return { socket, served: server.connections[0] as Socket }
    }

    it.each(chains)(
      '%s: the stream is destroyed when its end is still unflushed a grace later: the client sees a cut stream',
      async (_name, observe) => {
        const { socket, served } = await stalledStream(observe)
        // Ended, not destroyed: the client could still read the end.
        expect(served.destroyed).toBe(false)
        const closed = once(served, 'close')
        // The grace's timer, armed when the stream was ended (at least: in a
        // worker shared with other files, a timer those left — undici's
        // fast-timer tick re-arming itself — lands on the faked setTimeout
        // too; a CI run counted 2). What follows proves the grace by itself.
        expect(vi.getTimerCount()).toBeGreaterThanOrEqual(1)
        vi.advanceTimersByTime(RESPOND_END_GRACE_MS - 1)
        expect(served.destroyed).toBe(false)
        vi.advanceTimersByTime(1)
        // Before, it stayed open for good: this waited out the test's timeout.
        await closed
        // No terminating chunk: the client can tell the stream was cut.
        const { head, tail } = await readAll(socket)
        expect(head.startsWith('HTTP/1.1 200 OK')).toBe(true)
        // No last chunk at all, with a trailer or without.
        expect(tail).not.toMatch(LAST_CHUNK)
      },
    )

    it.each(chains)(
      '%s: a client that reads again gets the clean end, and keeps its connection',
      async (_name, observe) => {
        const { socket, served } = await stalledStream(observe)
        // Within the grace, however long reading the buffered events takes.
        const { tail } = await readAll(socket, (t) =>
          t.endsWith('0\r\nx-deadline-expired: 1\r\n\r\n'),
        )
        expect(tail.endsWith('\r\n0\r\nx-deadline-expired: 1\r\n\r\n')).toBe(true)
        // The same connection answers the next request.
        socket.write('GET /next HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n')
        const { tail: next } = await readAll(socket, (t) => t.endsWith('\r\n\r\nnext'))
        expect(next.endsWith('\r\n\r\nnext')).toBe(true)
        expect(server?.connections).toHaveLength(1)
        // The end left (the next answer came after it): the grace's timer was
        // cleared, and nothing destroys the connection past the grace.
        vi.advanceTimersByTime(RESPOND_END_GRACE_MS)
        expect(served.destroyed).toBe(false)
      },
    )
  },
)
