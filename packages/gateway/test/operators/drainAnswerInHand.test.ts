import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import type { AddressInfo } from 'node:net'
import type { FakeProvider } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createGateway,
  type DrainReport,
  type GatewayRouter,
  type LogRecord,
} from '../../src/index.js'
import { fakeProvider, fallback } from '../support/harness.js'

/**
 * A drain whose timeout (here `drainTimeoutMs: 0`, "cancel at once") comes
 * when a request's model answer is already in hand: the cancel no longer
 * reaches it, and it is written whole in the grace. It finished: `drained`,
 * not `cutOff` (counted cut, the shutdown line warned "1 cut off" and the
 * CLI exited 3 for a whole 200 logged at info).
 */
describe('a drain whose timeout finds the answer in hand', () => {
  let fake: FakeProvider | undefined
  let stop: (() => Promise<void>) | undefined
  let listener: ((message: unknown) => void) | undefined
  afterEach(async () => {
    if (listener) unsubscribe('hourglass:llm:attempt', listener)
    await stop?.()
    await fake?.close()
    fake = undefined
    stop = undefined
    listener = undefined
  })

  for (const stream of [false, true]) {
    it(`${stream ? 'a stream' : 'a whole answer'} written whole is drained, not cut off`, async () => {
      const provider = await fakeProvider('openai', ['k'])
      fake = provider.fake
      const logs: LogRecord[] = []
      const gateway: GatewayRouter = createGateway(
        { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
        { logger: (r) => logs.push(r), drainTimeoutMs: 0 },
      )
      const server = express().use(gateway).listen(0, '127.0.0.1')
      await new Promise((resolve) => server.once('listening', resolve))
      stop = async () => {
        await gateway.close()
        server.closeAllConnections()
        await new Promise((resolve) => server.close(resolve))
      }
      let closing: Promise<DrainReport> | undefined
      listener = (message) => {
        if ((message as { decision?: string }).decision === 'success') closing ??= gateway.close()
      }
      subscribe('hourglass:llm:attempt', listener)
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream }),
      })
      const text = await res.text()
      expect(res.status).toBe(200)
      if (stream) expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
      else expect(JSON.parse(text).choices[0].finish_reason).toBe('stop')
      expect(closing).toBeDefined()
      expect(await closing).toEqual({ inFlight: 1, drained: 1, cutOff: 0, ms: expect.any(Number) })
      const request = logs.find((l) => l.event === 'request')
      expect(request).toMatchObject({ level: 'info', status: 200 })
      expect(request?.['error']).toBeUndefined()
      const shutdown = logs.find((l) => l.event === 'shutdown')
      expect(shutdown?.level).toBe('info')
      expect(shutdown?.msg).toMatch(/^shutdown: drained 1 in \d+ ms$/)
    })
  }
})
