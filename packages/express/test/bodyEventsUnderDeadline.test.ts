import { EventEmitter } from 'node:events'
import { Readable, Transform, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'
import { currentDeadline, remainingMs, runWithDeadline } from '@hourglass/core'
import type { Request } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * A handler that reads its upload itself, without a body parser: Node emits
 * each chunk that arrives later, and the body's end, from the connection's
 * parser, in the context the connection was accepted in. There,
 * `currentDeadline()` read nothing once the first chunk had gone: an
 * outbound call made from `req.on('end')` carried no deadline and was not
 * stopped at the 504 (`remainingMs()` read Infinity).
 */
describe.each(majors)(
  "the request's body events run in the context their listeners were added in ($name)",
  (major) => {
    let server: Running | undefined
    afterEach(async () => {
      await server?.close()
      server = undefined
    })

    /** POSTs three chunks, each only once the server has read the one before. */
    async function upload(
      route: (req: Request, chunkRead: () => void) => Promise<unknown>,
      headers: Record<string, string> = {},
    ) {
      const app = major.app()
      app.use(deadline({ defaultMs: 5000 }))
      let read = deferred()
      app.post(
        '/',
        major.route(async (req, res) => {
          const seen = await route(req, () => read.resolve())
          res.json(seen)
        }),
      )
      server = await listen(app)
      async function* body() {
        for (const chunk of ['one', 'two', 'three']) {
          yield Buffer.from(chunk)
          await read.promise
          read = deferred()
        }
      }
      const res = await request(server.url, {
        method: 'POST',
        headers,
        body: Readable.from(body()),
        dispatcher: client(),
      })
      expect(res.statusCode).toBe(200)
      return res.body.json()
    }

    it("req.on('data') and req.on('end') read the request's deadline for every chunk, and so does a timer started there", async () => {
      const seen = await upload(
        (req, chunkRead) =>
          new Promise((resolve) => {
            const data: boolean[] = []
            req.on('data', () => {
              data.push(currentDeadline() === req.deadline)
              chunkRead()
            })
            req.on('end', () => {
              const end = currentDeadline() === req.deadline
              const leftMs = remainingMs()
              setImmediate(() =>
                resolve({ data, end, timer: currentDeadline() === req.deadline, leftMs }),
              )
            })
          }),
      )
      expect(seen).toMatchObject({ data: [true, true, true], end: true, timer: true })
      // Before: Infinity, serialised as null (no deadline to propagate).
      expect((seen as { leftMs: unknown }).leftMs).toBeGreaterThan(0)
    })

    it.each([
      ['chunked', {}],
      ['framed by Content-Length', { 'content-length': String('onetwothree'.length) }],
    ])(
      'the transforms of a pipeline(req, …) read the deadline for every chunk (%s)',
      async (_framing, headers) => {
        const seen = await upload(async (req, chunkRead) => {
          const chunks: boolean[] = []
          await pipeline(
            req,
            new Transform({
              transform(chunk, _encoding, callback) {
                chunks.push(currentDeadline() === req.deadline)
                chunkRead()
                callback(null, chunk)
              },
            }),
            new Writable({ write: (_chunk, _encoding, callback) => callback() }),
          )
          return { chunks }
        }, headers)
        expect(seen).toEqual({ chunks: [true, true, true] })
      },
    )

    // Each listener's own context, not the request's: run under the request's
    // deadline, a listener added under a child deadline (or a slice) lost its
    // limits for every chunk, and one added with the deadline hidden
    // (`runWithDeadline(undefined, …)`, as core's README advises) found it back.
    it('a listener added under a child deadline reads that child for every chunk and at the end; one added with the deadline hidden reads none', async () => {
      const seen = await upload(
        (req, chunkRead) =>
          new Promise((resolve) => {
            const child = req.deadline.child(1000)
            const scoped: boolean[] = []
            const hidden: boolean[] = []
            runWithDeadline(child, () =>
              req.on('data', () => {
                scoped.push(currentDeadline() === child)
                chunkRead()
              }),
            )
            runWithDeadline(undefined, () =>
              req.on('data', () => hidden.push(currentDeadline() === undefined)),
            )
            runWithDeadline(child, () =>
              req.once('end', () => resolve({ scoped, hidden, end: currentDeadline() === child })),
            )
          }),
      )
      expect(seen).toEqual({ scoped: [true, true, true], hidden: [true, true, true], end: true })
    })

    it('a listener removed is not called, once listeners fire once, and the emit returns as Node’s does', async () => {
      const seen = await upload(
        (req, chunkRead) =>
          new Promise((resolve) => {
            let removedCalls = 0
            let onceCalls = 0
            const removed = () => removedCalls++
            req.on('data', removed)
            req.removeListener('data', removed)
            const onceData = () => onceCalls++
            req.once('data', onceData)
            req.on('data', () => chunkRead())
            req.on('end', () =>
              resolve({
                removedCalls,
                onceCalls,
                left: req.listenerCount('data'),
                // With listeners: true, as EventEmitter's; with none: false.
                readableWithNone: req.emit('readable'),
                dataWithOne: req.emit('data', Buffer.alloc(0)),
              }),
            )
          }),
      )
      expect(seen).toEqual({
        removedCalls: 0,
        onceCalls: 1,
        left: 1,
        readableWithNone: false,
        dataWithOne: true,
      })
    })

    // One removed by an earlier listener of the same emit still runs, as
    // Node's copy of the listeners says — in its own context: forgotten at
    // its removal, it ran in the emit's.
    it('a listener removed by an earlier one of the same emit still runs in its own context', async () => {
      const seen = await upload(
        (req, chunkRead) =>
          new Promise((resolve) => {
            const child = req.deadline.child(1000)
            const calls: boolean[] = []
            const late = () => calls.push(currentDeadline() === child)
            req.on('data', () => chunkRead())
            runWithDeadline(child, () => {
              req.on('data', () => req.off('data', late))
              req.on('data', late)
            })
            req.on('end', () => resolve({ calls }))
          }),
      )
      expect(seen).toEqual({ calls: [true] })
    })

    // A reader adding and removing a listener per read left every one
    // behind until the request ended (Node emits no removeListener for the
    // only listener of an event, so that could not tell).
    it('the contexts of listeners no longer added are not kept until the request ends', async () => {
      v8.setFlagsFromString('--expose-gc')
      const gc = runInNewContext('gc') as () => void
      const seen = await upload(async (req, chunkRead) => {
        const refs: WeakRef<object>[] = []
        for (let i = 0; i < 200; i++) {
          const listener = () => {}
          refs.push(new WeakRef(listener))
          req.on('end', listener)
          req.off('end', listener)
        }
        req.on('data', () => chunkRead())
        await new Promise((resolve) => req.on('end', resolve))
        gc()
        return { alive: refs.filter((ref) => ref.deref() !== undefined).length }
      })
      // Dropped once they outnumber the live ones: a few dozen at most.
      expect((seen as { alive: number }).alive).toBeLessThan(40)
    })

    // Node emits `newListener` before it adds the listener: pruned then, a
    // listener added from another's `newListener` (a library watching for
    // readers) pruned that outer one, not yet added, which then ran without
    // its context.
    it('a listener whose newListener adds another, as the contexts are pruned, keeps its own', async () => {
      const seen = await upload(
        (req, chunkRead) =>
          new Promise((resolve) => {
            // Up to the prune: contexts of 31 listeners no longer added.
            for (let i = 0; i < 31; i++) {
              const gone = () => {}
              req.on('end', gone)
              req.off('end', gone)
            }
            let watched = false
            req.on('newListener', (event) => {
              if (event !== 'data' || watched) return
              watched = true
              req.on('end', () => {})
            })
            const child = req.deadline.child(1000)
            const calls: boolean[] = []
            runWithDeadline(child, () =>
              req.on('data', () => {
                calls.push(currentDeadline() === child)
                chunkRead()
              }),
            )
            req.on('end', () => resolve({ calls }))
          }),
      )
      expect(seen).toEqual({ calls: [true, true, true] })
    })

    // Called by the emit that runs them in their context, an async
    // listener's rejection went nowhere: an unhandled rejection (under
    // Node's default, the process ended), the request never told.
    it('with EventEmitter.captureRejections, an async listener’s rejection destroys the request with it, as Node’s emit does', async () => {
      const captured = EventEmitter.captureRejections
      EventEmitter.captureRejections = true
      try {
        const app = major.app()
        app.use(deadline({ defaultMs: 5000 }))
        const told = deferred<unknown>()
        app.post('/', (req) => {
          req.on('error', (error) => told.resolve(error))
          req.on('data', async () => {
            throw new Error('listener failed')
          })
        })
        server = await listen(app)
        const answered = request(server.url, {
          method: 'POST',
          body: 'one',
          dispatcher: client(),
        }).catch((error: unknown) => error)
        expect(await told.promise).toMatchObject({ message: 'listener failed' })
        await answered
      } finally {
        EventEmitter.captureRejections = captured
      }
    })
  },
)
