import type { ErrorRequestHandler, RequestHandler } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

/**
 * `app.use(deadlineErrors)` — the factory mounted instead of what it returns,
 * as `app.use(cors)` is written for `app.use(cors())`. TypeScript took it
 * (a function of no parameters is a `RequestHandler`), and Express, seeing
 * no four parameters, called it as a plain middleware: errors never reached
 * it (a slice's expiry went to the final handler as a 500), and each request
 * that reached it (every 404) got a new error handler back and was left
 * unanswered — hung for good, or until `deadline()`'s 504 a whole budget
 * later. `app.use(deadline)` failed every request with a TypeError listing
 * the request's own fields as unknown options.
 */
describe.each(majors)('a factory mounted instead of its middleware ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('app.use(deadlineErrors): the request it is given fails at once, naming the mistake', async () => {
    const app = major.app()
    const passedOn: unknown[] = []
    app.get('/ok', (_req, res) => {
      res.send('ok')
    })
    app.use(deadlineErrors as unknown as RequestHandler)
    const userHandler: ErrorRequestHandler = (error, _req, res, _next) => {
      passedOn.push(error)
      res.status(500).json({ message: (error as Error).message })
    }
    app.use(userHandler)
    server = await listen(app)

    // Before: no answer at all (no deadline() in front). Bounded so the old
    // code fails here rather than at the test's timeout.
    const answer = await request(`${server.url}/missing`, {
      dispatcher: agent,
      headersTimeout: 5000,
    })
    expect(answer.statusCode).toBe(500)
    expect(await answer.body.json()).toEqual({
      message: expect.stringContaining('app.use(deadlineErrors())'),
    })
    expect(passedOn).toEqual([expect.any(TypeError)])
    // Routes ahead of it are untouched.
    const ok = await request(`${server.url}/ok`, { dispatcher: agent })
    expect(await ok.body.text()).toBe('ok')
  })

  it('app.use(deadline): a TypeError saying to call it, not a list of the request fields', async () => {
    const app = major.app()
    const passedOn: unknown[] = []
    app.use(deadline as unknown as RequestHandler)
    app.get('/ok', (_req, res) => {
      res.send('ok')
    })
    const userHandler: ErrorRequestHandler = (error, _req, res, _next) => {
      passedOn.push(error)
      res.status(500).end()
    }
    app.use(userHandler)
    server = await listen(app)

    const answer = await request(`${server.url}/ok`, { dispatcher: agent })
    expect(answer.statusCode).toBe(500)
    await answer.body.dump()
    expect(passedOn).toHaveLength(1)
    expect(passedOn[0]).toBeInstanceOf(TypeError)
    expect((passedOn[0] as Error).message).toContain('app.use(deadline(')
    expect((passedOn[0] as Error).message).not.toContain('_readableState')
  })
})

describe('calling the factories themselves', () => {
  it('still takes no arguments (deadlineErrors) or an options object (deadline)', () => {
    expect(deadlineErrors()).toBeTypeOf('function')
    expect(deadlineErrors().length).toBe(4)
    expect(deadline()).toBeTypeOf('function')
    expect(deadline({ defaultMs: 500 })).toBeTypeOf('function')
    // An options object that is not one is still refused as before.
    expect(() => deadline({ defaultMS: 500 } as never)).toThrow(/defaultMs/)
  })

  it('TypeScript refuses the factories where a handler goes (checked by tsc)', () => {
    const app = majors[0].app()
    const mount = (): void => {
      // @ts-expect-error deadlineErrors is the factory, not the error handler
      app.use(deadlineErrors)
      // @ts-expect-error deadline is the factory, not the middleware
      app.use(deadline)
    }
    expect(mount).toBeTypeOf('function')
  })
})
