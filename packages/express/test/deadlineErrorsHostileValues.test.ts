import type { ErrorRequestHandler } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

/**
 * What a handler passes to `next` may be anything: a revoked Proxy, an
 * object whose getters throw. deadlineErrors() read its `type`, `code` and
 * `message` unguarded, and its own TypeError reached the app's next error
 * handler in place of the value the handler passed.
 */
describe.each(majors)('deadlineErrors() and values whose reads throw ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  const revoked = () => {
    const { proxy, revoke } = Proxy.revocable({}, {})
    revoke()
    return proxy
  }
  const throwingGetters = () =>
    Object.defineProperties(
      {},
      Object.fromEntries(
        ['type', 'code', 'message', 'name', 'cause'].map((key) => [
          key,
          {
            get() {
              throw new Error(`getter ${key} threw`)
            },
          },
        ]),
      ),
    )

  it.each([
    ['a revoked Proxy', revoked],
    ['an object whose getters throw', throwingGetters],
  ])('passes %s on to the next error handler as it is', async (_what, make) => {
    const thrown = make()
    const passedOn: unknown[] = []
    const app = major.app()
    app.use(deadline({ defaultMs: 2000 }))
    app.get('/', (_req, _res, next) => next(thrown))
    app.use(deadlineErrors())
    app.use(((error, _req, res, _next) => {
      passedOn.push(error)
      res.status(500).end()
    }) as ErrorRequestHandler)
    server = await listen(app)
    const res = await request(server.url, { dispatcher: agent })
    await res.body.dump()
    expect(res.statusCode).toBe(500)
    expect(passedOn).toHaveLength(1)
    expect(passedOn[0]).toBe(thrown)
  })
})
