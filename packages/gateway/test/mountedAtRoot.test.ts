import type { Server } from 'node:http'
import { ManualClock } from '@hourglass/core'
import type { FakeProvider } from '@hourglass/testkit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRouter } from '../src/index.js'
import { fakeProvider, fallback } from './support/harness.js'

/**
 * Mounted at the root as the README shows (`app.use(gateway)`, then the
 * app's own routes), every request of the app passes through the router.
 * Its deadline and its drain are for the requests it answers: the app's own
 * slow route got the gateway's 504 at `deadline.defaultMs`, `close()` counted
 * and cut the app's in-flight response, and every later answer of the app
 * said `connection: close`.
 */
describe('mounted at the root of an app with routes of its own', () => {
  let fake: FakeProvider | undefined
  let server: Server | undefined
  let gateway: GatewayRouter | undefined
  afterEach(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined))
    await gateway?.close()
    await fake?.close()
    server = undefined
    gateway = undefined
    fake = undefined
  })

  /** A promise and its resolve: what a route waits on, what the test waits on. */
  function gate(): { promise: Promise<void>; open(): void } {
    let open!: () => void
    const promise = new Promise<void>((resolve) => {
      open = resolve
    })
    return { promise, open }
  }

  /** The gateway mounted at the root, then the app's routes: `/report` and `/report-stream` wait for the test. */
  async function mountedApp() {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    const clock = new ManualClock()
    const mounted = createGateway(
      {
        providers: { o: provider.entry },
        models: { m: fallback(['o', 'gpt']) },
        deadline: { defaultMs: 1000 },
      },
      { clock, drainTimeoutMs: 0, logger: () => {} },
    )
    gateway = mounted
    const arrived = gate()
    const done = gate()
    const app = express()
    app.use(mounted)
    app.get('/report', async (_req, res) => {
      arrived.open()
      await done.promise
      if (!res.headersSent) res.json({ report: 'done' })
    })
    app.get('/report-stream', async (_req, res) => {
      res.write('part1\n')
      arrived.open()
      await done.promise
      res.end('part2\n')
    })
    app.get('/ping', (_req, res) => {
      res.send('pong')
    })
    app.get('/v1/models/:id/versions', (_req, res) => {
      res.json({ versions: [] })
    })
    const listening = app.listen(0, '127.0.0.1')
    server = listening
    await new Promise((resolve) => listening.once('listening', resolve))
    const { port } = listening.address() as { port: number }
    return { gateway: mounted, clock, arrived, done, base: `http://127.0.0.1:${port}` }
  }

  it("an app route outlives the gateway's deadline.defaultMs: no 504 of the gateway's; its own paths keep theirs", async () => {
    const { clock, arrived, done, base } = await mountedApp()
    const models = await fetch(`${base}/v1/models`)
    expect(models.status).toBe(200)
    expect(models.headers.get('x-request-id')).not.toBeNull()
    const report = fetch(`${base}/report`)
    await arrived.promise
    // Past defaultMs (1000 ms) on the gateway's clock.
    clock.advance(5000)
    done.open()
    const reported = await report
    expect({ status: reported.status, body: await reported.json() }).toEqual({
      status: 200,
      body: { report: 'done' },
    })
    expect(reported.headers.get('x-request-id')).toBeNull()
  })

  it('an app path under /v1/models/ longer than a log line is still the app’s (whole path matched, not the 256-character one logs show)', async () => {
    const { base } = await mountedApp()
    for (const id of ['v1-small', 'a'.repeat(300)]) {
      const res = await fetch(`${base}/v1/models/${id}/versions`)
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ versions: [] })
      expect(res.headers.get('x-request-id')).toBeNull()
    }
  })

  it("close() neither counts nor cuts an app response in flight; the app's later answers keep their connection", async () => {
    const { gateway, arrived, done, base } = await mountedApp()
    const streamed = await fetch(`${base}/report-stream`)
    await arrived.promise
    const drain = await gateway.close()
    done.open()
    expect(await streamed.text()).toBe('part1\npart2\n')
    expect(drain).toMatchObject({ inFlight: 0, cutOff: 0 })
    const ping = await fetch(`${base}/ping`)
    expect(await ping.text()).toBe('pong')
    expect(ping.headers.get('connection')).not.toBe('close')
  })

  it('after close(), the gateway still refuses its own API paths (503) while the app answers its own', async () => {
    const { gateway, base } = await mountedApp()
    await gateway.close()
    const refused = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    })
    expect(refused.status).toBe(503)
    expect(refused.headers.get('connection')).toBe('close')
    const ping = await fetch(`${base}/ping`)
    expect(ping.status).toBe(200)
    expect(ping.headers.get('connection')).not.toBe('close')
  })
})
