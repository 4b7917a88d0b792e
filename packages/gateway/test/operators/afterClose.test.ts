import type { AddressInfo } from 'node:net'
import type { FakeProvider } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway } from '../../src/index.js'
import { fakeProvider, fallback } from '../support/harness.js'

/**
 * An app that keeps its server (and the gateway's router) after
 * `gateway.close()`: what a client or a scraper sees from then on.
 */
describe('a router still mounted after close()', () => {
  let fake: FakeProvider | undefined
  let stopServer: (() => Promise<void>) | undefined
  afterEach(async () => {
    await stopServer?.()
    await fake?.close()
    fake = undefined
    stopServer = undefined
  })

  async function closedGateway() {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    const gateway = createGateway(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'gpt']) } },
      { logger: () => {} },
    )
    const server = express().use(gateway).listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    stopServer = async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    expect((await fetch(`${url}/metrics`)).status).toBe(200)
    await gateway.close()
    return url
  }

  it('/metrics answers 503, as /readyz does, not a 200 page saying the export failed', async () => {
    const url = await closedGateway()
    const metrics = await fetch(`${url}/metrics`)
    const text = await metrics.text()
    expect(metrics.status).toBe(503)
    expect(text).not.toMatch(/failed to export/)
    expect((await fetch(`${url}/readyz`)).status).toBe(503)
  })

  it('refuses an API request with 503 shutting_down whatever the case of its path, as the router serves it', async () => {
    const url = await closedGateway()
    // (`/v1/…` itself: drain.test.ts.)
    for (const path of ['/V1/chat/completions', '/V1/Chat/Completions']) {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
      })
      expect(res.status, path).toBe(503)
      expect(((await res.json()) as { error: { code: string } }).error.code, path).toBe(
        'shutting_down',
      )
    }
    expect(fake?.requests).toHaveLength(0)
  })
})
