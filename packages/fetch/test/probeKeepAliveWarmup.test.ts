import { faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { probe, suggestTimeouts } from '../src/index.js'

// `freshConnections: false` measures keep-alive calls, "the warm-up calls
// open the connection" (README). undici puts a connection back in its pool
// only a turn after the body's end has been read, and the probe made its
// next call at once: a second connection was opened, so with `warmup: 1` the
// first sample timed a lookup and a connect, `phases.connect` was set and
// suggestTimeouts sized a connect timeout off it. No figure here is a time.

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

it('with freshConnections: false the warm-up opens the one connection every sample reuses', async () => {
  const server = await faultServer({ type: 'respond', body: 'ok' })
  closers.push(server)
  const result = await probe(server.url, { warmup: 1, samples: 5, freshConnections: false })
  expect(server.totalConnections).toBe(1)
  expect(result.samples.map((s) => s.connectMs)).toEqual([
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  ])
  expect(result.phases.connect).toBeUndefined()
  expect(suggestTimeouts(result, 1000).connectTimeoutMs).toBeUndefined()
})
