import diagnostics_channel from 'node:diagnostics_channel'
import { once } from 'node:events'
import { Deadline, ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmAttemptMessage, llmChannels } from '../../src/channels.js'
import { rawServer } from '../adapters/support/rawServer.js'
import { useFakes, user } from './support/fakes.js'

// A whole (non-streamed) 2xx answer whose body the deadline or the caller's
// signal cut while it was read had an HTTP answer, and is charged as one:
// its record carries that status, as a stream stopped after its headers
// does. It had none (`status` undefined).

const fakes = useFakes()
const request = { messages: [user('Write at length about the sea.')], maxTokens: 100 }
const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

/** A 2xx whose status line, headers and start of JSON body are sent, the rest held. */
async function heldAnswer(status: number) {
  const closed: Promise<unknown>[] = []
  const server = await rawServer((req, res) => {
    req.resume()
    closed.push(once(res, 'close'))
    res.writeHead(status, { 'content-type': 'application/json' })
    res.write(
      '{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"content":"Th',
    )
  })
  servers.push(server)
  return { adapter: fakes.adapterFor('openai', server.baseURL, 'm'), closed }
}

/** Resolves once the next response's headers have reached the code awaiting them. */
function headersRead(): Promise<void> {
  return new Promise((resolve) => {
    const onHeaders = () => {
      diagnostics_channel.unsubscribe('undici:request:headers', onHeaders)
      setImmediate(resolve)
    }
    diagnostics_channel.subscribe('undici:request:headers', onHeaders)
  })
}

describe('the status of a whole answer stopped while its body was read', () => {
  it('ended by the deadline: the 200 it got, on the record and on hourglass:llm:attempt', async () => {
    const { adapter, closed } = await heldAnswer(200)
    const clock = new ManualClock()
    const deadline = Deadline.after(30_000, { clock })
    const records: AttemptRecord[] = []
    const published: LlmAttemptMessage[] = []
    const listen = (message: unknown) => published.push(message as LlmAttemptMessage)
    llmChannels.attempt.subscribe(listen)
    try {
      const reading = headersRead()
      const call = callModel({
        models: [adapter],
        deadline,
        request,
        limits: { admission: false },
        onAttempt: (r) => records.push(r),
      }).catch((e: unknown) => e)
      await reading
      clock.advance(30_000)
      await call
    } finally {
      llmChannels.attempt.unsubscribe(listen)
    }
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({
      decision: 'fail',
      errorKind: 'deadline_exceeded',
      status: 200,
    })
    expect(published[0]?.status).toBe(200)
    await Promise.all(closed)
  })

  it('ended by the caller’s signal: the 2xx it got (201), not undefined', async () => {
    const { adapter, closed } = await heldAnswer(201)
    const controller = new AbortController()
    const records: AttemptRecord[] = []
    const reading = headersRead()
    const call = callModel({
      models: [adapter],
      signal: controller.signal,
      request,
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    }).catch((e: unknown) => e)
    await reading
    controller.abort(new Error('the user left'))
    await call
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ decision: 'fail', errorKind: 'aborted', status: 201 })
    await Promise.all(closed)
  })

  it('stopped before any response headers: no status, as before', async () => {
    let arrived: () => void = () => {}
    const received = new Promise<void>((resolve) => {
      arrived = resolve
    })
    const server = await rawServer((req) => {
      req.resume()
      arrived()
    })
    servers.push(server)
    const controller = new AbortController()
    const records: AttemptRecord[] = []
    const call = callModel({
      models: [fakes.adapterFor('openai', server.baseURL, 'm')],
      signal: controller.signal,
      request,
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    }).catch((e: unknown) => e)
    await received
    controller.abort(new Error('stop'))
    await call
    expect(records).toHaveLength(1)
    expect(records[0]?.errorKind).toBe('aborted')
    expect(records[0]?.status).toBeUndefined()
  })
})
