import { once } from 'node:events'
import { pipeline, Readable } from 'node:stream'
import { isClientClosed } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  expressChannels,
  type IngressClientClosedMessage,
  type IngressEndMessage,
  type IngressInvalidHeaderMessage,
  type IngressStartMessage,
} from '../src/index.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * What the end event (and so a log line or a span) says about a response
 * that was over before it ended: the caller leaving is `client-closed`; the
 * server's own failure is not.
 */
describe.each(majors)('the outcome of a response over before it ended ($name)', (major) => {
  let server: Running | undefined
  const agent = client()
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('is error, not client-closed, when pipeline() destroys it because its source failed mid-body', async () => {
    const app = major.app()
    const failure = new Error('upstream broke')
    const piped = deferred<{ source: Readable; signal: AbortSignal }>()
    app.use(deadline({ defaultMs: 10_000 }))
    app.get('/', (req, res) => {
      const source = new Readable({ read() {} })
      // The callback form: the handler deals with the failure itself.
      pipeline(source, res, () => {})
      source.push('first part')
      piped.resolve({ source, signal: req.deadline.signal })
    })
    server = await listen(app)
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    const left = record<IngressClientClosedMessage>(expressChannels.clientClosed.name)
    try {
      const answer = await request(server.url, { dispatcher: agent })
      expect(answer.statusCode).toBe(200)
      await once(answer.body, 'data')
      const { source, signal } = await piped.promise
      const cut = answer.body.text()
      source.destroy(failure)
      // The client is still there: it sees its answer cut short.
      await expect(cut).rejects.toThrow()
      await ended.count(1)
      expect(ended.messages.map((m) => m.outcome)).toEqual(['error'])
      expect(ended.messages[0]?.error).toBe(failure)
      expect(left.messages).toEqual([])
      // Work still running for it stops, with the reason it is over.
      expect(signal.aborted).toBe(true)
      expect(signal.reason).toBe(failure)
    } finally {
      ended.stop()
      left.stop()
    }
  })

  it('is still client-closed when the client leaves mid-body of a pipeline()', async () => {
    const app = major.app()
    const piped = deferred<{ source: Readable; signal: AbortSignal }>()
    app.use(deadline({ defaultMs: 10_000 }))
    app.get('/', (req, res) => {
      const source = new Readable({ read() {} })
      pipeline(source, res, () => {})
      source.push('first part')
      piped.resolve({ source, signal: req.deadline.signal })
    })
    server = await listen(app)
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const caller = new AbortController()
      const answer = await request(server.url, { signal: caller.signal, dispatcher: agent })
      await once(answer.body, 'data')
      caller.abort()
      await ended.count(1)
      const { source, signal } = await piped.promise
      expect(ended.messages.map((m) => m.outcome)).toEqual(['client-closed'])
      expect(ended.messages[0]).not.toHaveProperty('error')
      expect(isClientClosed(signal.reason)).toBe(true)
      if (!source.closed) await once(source, 'close').catch(() => {})
      expect(source.destroyed).toBe(true)
    } finally {
      ended.stop()
    }
  })

  it('is client-closed, not refused, for a request strict refuses after its client left: nobody got the 400', async () => {
    const app = major.app()
    const arrived = deferred()
    let handled = 0
    // A slow middleware ahead: it goes on only after the client left.
    app.use((_req, res, next) => {
      res.once('close', () => setImmediate(next))
      arrived.resolve()
    })
    app.use(deadline({ strict: true, defaultMs: 10_000 }))
    app.get('/', (_req, res) => {
      handled++
      res.json({})
    })
    server = await listen(app)
    const starts = record<IngressStartMessage>(expressChannels.start.name)
    const invalid = record<IngressInvalidHeaderMessage>(expressChannels.invalidHeader.name)
    const left = record<IngressClientClosedMessage>(expressChannels.clientClosed.name)
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const caller = new AbortController()
      const call = request(server.url, {
        headers: { 'x-deadline-remaining-ms': 'soon' },
        signal: caller.signal,
        dispatcher: agent,
      })
      call.catch(() => {})
      await arrived.promise
      caller.abort()
      await expect(call).rejects.toThrow()
      await ended.count(1)
      expect(ended.messages.map((m) => m.outcome)).toEqual(['client-closed'])
      expect(left.messages).toHaveLength(1)
      expect(left.messages[0]?.deadline).toBe(ended.messages[0]?.deadline)
      // The caller's mistake is reported all the same, and the start says it was refused.
      expect(invalid.messages.map((m) => m.invalid[0]?.header)).toEqual(['x-deadline-remaining-ms'])
      expect(starts.messages.map((m) => m.refused)).toEqual([true])
      expect(handled).toBe(0)
    } finally {
      starts.stop()
      invalid.stop()
      left.stop()
      ended.stop()
    }
  })
})
