import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import { isClientClosed } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  deadline,
  deadlineErrors,
  expressChannels,
  type IngressClientClosedMessage,
  type IngressEndMessage,
} from '../src/index.js'
import { client, deferred, listen, majors, type Running, record } from './support/servers.js'

describe.each(majors)('the client leaving ($name)', (major) => {
  const running: Running[] = []
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.close()))
  })

  it('aborts the slow downstream call made under req.deadline: the downstream server sees its socket close; no 504 is written', async () => {
    // Downstream: a real server that holds every request and notes when its socket closes.
    let downstreamClosedAt = 0
    const downstreamGotRequest = deferred()
    const downstreamClosed = deferred()
    const downstream = await listen((req: IncomingMessage, _res: ServerResponse) => {
      downstreamGotRequest.resolve()
      req.socket.once('close', () => {
        downstreamClosedAt = performance.now()
        downstreamClosed.resolve()
      })
    })
    running.push(downstream)
    const downstreamAgent = client()

    const handlerErrors: unknown[] = []
    const userErrors: unknown[] = []
    const app = major.app()
    app.use(deadline({ defaultMs: 10_000 }))
    app.get(
      '/',
      major.route(async (req, res) => {
        try {
          const answer = await request(downstream.url, {
            signal: req.deadline.signal,
            dispatcher: downstreamAgent,
          })
          res.json(await answer.body.json())
        } catch (error) {
          handlerErrors.push(error)
          throw error
        }
      }),
    )
    app.use(deadlineErrors())
    app.use((error: unknown, _req: unknown, _res: unknown, next: (e: unknown) => void) => {
      userErrors.push(error)
      next(error)
    })
    const upstream = await listen(app)
    running.push(upstream)

    const closed = record<IngressClientClosedMessage>(expressChannels.clientClosed.name)
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    const expired = record<unknown>(expressChannels.expire.name)
    const caller = new AbortController()
    const agent = client()
    const call = request(upstream.url, { signal: caller.signal, dispatcher: agent })
    call.catch(() => {})
    await downstreamGotRequest.promise
    const abortedAt = performance.now()
    caller.abort()
    await expect(call).rejects.toThrow()
    await downstreamClosed.promise
    const stopMs = downstreamClosedAt - abortedAt
    await ended.count(1)
    closed.stop()
    ended.stop()
    expired.stop()
    await downstreamAgent.close()
    await agent.close()

    console.info(
      `[${major.name}] client abort → downstream socket closed in ${stopMs.toFixed(2)} ms`,
    )
    expect(stopMs).toBeLessThan(200)
    expect(closed.messages).toHaveLength(1)
    const message = closed.messages[0]
    expect(isClientClosed(message?.deadline.reason)).toBe(true)
    expect(message?.deadline.signal.aborted).toBe(true)
    expect(ended.messages).toEqual([
      expect.objectContaining({ outcome: 'client-closed', statusCode: 200 }),
    ])
    expect(expired.messages).toEqual([])
    // The handler saw its call stop with the reason; deadlineErrors() answered nothing and
    // passed nothing on.
    expect(handlerErrors).toHaveLength(1)
    expect(isClientClosed(handlerErrors[0])).toBe(true)
    expect(userErrors).toEqual([])
  })
})
