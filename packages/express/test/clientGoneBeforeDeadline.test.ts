import { isClientClosed } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  deadlineErrors,
  expressChannels,
  type IngressEndMessage,
  type IngressExpireMessage,
} from '../src/index.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * deadline() is not always first: an auth or session middleware ahead of it
 * may await something while the client gives up. The response's `close` has
 * then already fired when deadline() adds its listener, and would never come
 * again: the handler would run its whole budget for nobody.
 */
describe.each(majors)('a client gone before deadline() ran ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('gets a deadline already cancelled with ClientClosedError, and its end is reported', async () => {
    const app = major.app()
    const arrived = deferred()
    const handlerSaw = deferred<{ aborted: boolean; reason: unknown }>()
    // The slow middleware ahead: it finishes only after the client left.
    app.use((_req, res, next) => {
      res.once('close', () => setImmediate(next))
      arrived.resolve()
    })
    app.use(deadline({ defaultMs: 10_000 }))
    app.get('/', (req) => {
      handlerSaw.resolve({
        aborted: req.deadline.signal.aborted,
        reason: req.deadline.signal.reason,
      })
    })
    app.use(deadlineErrors())
    server = await listen(app)

    const ended = record<IngressEndMessage>(expressChannels.end.name)
    const expired = record<IngressExpireMessage>(expressChannels.expire.name)
    const agent = client()
    try {
      const caller = new AbortController()
      const call = request(server.url, { signal: caller.signal, dispatcher: agent })
      call.catch(() => {})
      await arrived.promise
      caller.abort()
      await expect(call).rejects.toThrow()
      const saw = await handlerSaw.promise
      expect(saw.aborted).toBe(true)
      expect(isClientClosed(saw.reason)).toBe(true)
      // Released now, not when the 10 s budget runs out (and no 504 written to nobody).
      expect(ended.messages).toEqual([expect.objectContaining({ outcome: 'client-closed' })])
      expect(expired.messages).toEqual([])
    } finally {
      ended.stop()
      expired.stop()
      await agent.close()
    }
  })
})
