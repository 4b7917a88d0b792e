import diagnostics from 'node:diagnostics_channel'
import type { IncomingMessage } from 'node:http'
import { ManualClock } from '@hourglass/core'
import {
  expressChannels,
  type IngressEndMessage,
  type IngressExpireMessage,
} from '@hourglass/express'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { type RunningGateway, startGateway } from '../../src/index.js'
import { fakeProvider, fallback } from '../support/harness.js'

/**
 * The gateway answers a request's deadline itself (its handler's deadline
 * ends `replyReserveMs`, 25 ms, before the ingress middleware's): an
 * OpenAI-shaped 504, or a stream's error event. What @hourglass/express
 * publishes for it — and so what a tracer puts on the request's span and the
 * exceeded count — must say the request ran out, not that it ended `ok`.
 * The handler's deadline (59,965 ms) falls due in an `advance` that leaves
 * the ingress one (59,990 ms) live: the gateway's answer, not the backstop's.
 */
describe("the ingress events of a request the gateway's deadline answered", () => {
  let fake: FakeProvider | undefined
  let running: RunningGateway | undefined
  const stops: Array<() => void> = []
  afterEach(async () => {
    for (const stop of stops.splice(0)) stop()
    await running?.close()
    await fake?.close()
    fake = running = undefined
  })

  /** The ingress messages of requests with `x-request-id: id`. */
  function recordIngress(id: string) {
    const ended: IngressEndMessage[] = []
    const expired: IngressExpireMessage[] = []
    let resolveEnded: () => void = () => {}
    const whenEnded = new Promise<void>((resolve) => {
      resolveEnded = resolve
    })
    const ours = (req: unknown) => (req as IncomingMessage).headers['x-request-id'] === id
    const onEnd = (m: unknown) => {
      if (!ours((m as IngressEndMessage).req)) return
      ended.push(m as IngressEndMessage)
      resolveEnded()
    }
    const onExpire = (m: unknown) => {
      if (ours((m as IngressExpireMessage).req)) expired.push(m as IngressExpireMessage)
    }
    diagnostics.subscribe(expressChannels.end.name, onEnd)
    diagnostics.subscribe(expressChannels.expire.name, onExpire)
    stops.push(() => {
      diagnostics.unsubscribe(expressChannels.end.name, onEnd)
      diagnostics.unsubscribe(expressChannels.expire.name, onExpire)
    })
    return { ended, expired, whenEnded }
  }

  async function start(script: Parameters<FakeProvider['setReply']>[0]) {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    fake.setReply(script)
    const clock = new ManualClock()
    running = await startGateway({
      port: 0,
      clock,
      config: {
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'gpt']) },
        deadline: { defaultMs: 60_000, reserveMs: 10 },
      },
      logger: () => {},
    })
    return { clock, url: `${running.url}/v1/chat/completions` }
  }

  function post(url: string, id: string, stream: boolean) {
    return fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': id },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream }),
    })
  }

  it('a 504 deadline_exceeded ends the request expired, its expiry published (action app)', async () => {
    const { clock, url } = await start(reply.hang())
    const ingress = recordIngress('answered-504')
    const answer = post(url, 'answered-504', false)
    await fake!.waitForRequests(1)
    clock.advance(59_970)
    const res = await answer
    expect(res.status).toBe(504)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('deadline_exceeded')
    await ingress.whenEnded
    expect(ingress.ended.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
    expect(ingress.expired.map((m) => [m.stage, m.action])).toEqual([['handler', 'app']])
  })

  it("a stream ended by the deadline's error event ends the request expired, not ok", async () => {
    // The first token at once, the next never within the test.
    const { clock, url } = await start(reply.text('Hello there, slowly', { tokenDelayMs: 600_000 }))
    const ingress = recordIngress('cut-stream')
    const res = await post(url, 'cut-stream', true)
    expect(res.status).toBe(200)
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    let received = ''
    while (!received.includes('Hello')) received += (await reader.read()).value ?? ''
    clock.advance(59_970)
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      received += next.value
    }
    expect(received).toContain('"code":"deadline_exceeded"')
    await ingress.whenEnded
    expect(ingress.ended.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 200]])
    expect(ingress.expired.map((m) => [m.stage, m.action])).toEqual([['handler', 'app']])
  })
})
