import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import type { FakeProvider } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRouter, type LogRecord } from '../../src/index.js'
import { fakeProvider, fallback } from '../support/harness.js'

/**
 * The request's deadline runs out as the model's answer is in hand (timers
 * late: here the ManualClock moved as the provider's body ends, on the
 * attempt's `attempt-end` event). The ingress
 * backstop answers the client 504; the handler's 200 is swallowed. The
 * request line says 504, with no `responseId` (the client was given none),
 * as the metrics count it — it said status 200 and a `chatcmpl-…` id.
 */
describe('the backstop 504 that beat an answer in hand', () => {
  let fake: FakeProvider | undefined
  let stop: (() => Promise<void>) | undefined
  let listener: ((message: unknown) => void) | undefined
  afterEach(async () => {
    if (listener) unsubscribe('hourglass:egress:attempt-end', listener)
    await stop?.()
    await fake?.close()
    fake = undefined
    stop = undefined
    listener = undefined
  })

  for (const stream of [false, true]) {
    it(`is logged as the 504 the client got (${stream ? 'stream' : 'whole'})`, async () => {
      const provider = await fakeProvider('openai', ['k'])
      fake = provider.fake
      const clock = new ManualClock(Date.now())
      const logs: LogRecord[] = []
      const gateway: GatewayRouter = createGateway(
        { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
        { logger: (r) => logs.push(r), clock },
      )
      const server = express().use(gateway).listen(0, '127.0.0.1')
      await new Promise((resolve) => server.once('listening', resolve))
      stop = async () => {
        await gateway.close()
        server.closeAllConnections()
        await new Promise((resolve) => server.close(resolve))
      }
      let moved = false
      listener = () => {
        if (!moved) {
          moved = true
          clock.advance(60_000)
        }
      }
      subscribe('hourglass:egress:attempt-end', listener)
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream }),
      })
      await res.text()
      const line = logs.find((l) => l.event === 'request')
      // The stream's headers had not gone out yet: it gets the backstop's 504 too.
      expect(res.status).toBe(504)
      expect(line?.['status']).toBe(res.status)
      expect(line?.['responseId']).toBeUndefined()
      expect(line).toMatchObject({ level: 'warn', error: 'deadline_exceeded' })
    })
  }
})
