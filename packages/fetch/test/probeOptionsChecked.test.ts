import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { createFetch, probe } from '../src/index.js'

// probe's own options mean what they say or are refused before a call is
// made. `headers` given as fetch takes them — a `Headers`, a `Map` — were
// read as a record, which has no entries: nothing was sent, and the probe
// timed a protected endpoint's 401. A string went as one header per
// character (`0: a`, `1: u`, …). `freshConnections: 'false'` (an
// environment variable) measured fresh connections, the opposite, and
// `null` keep-alive ones, where null is an option's default. No test here
// measures time.

let closers: FaultServer[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function serve(): Promise<FaultServer> {
  const server = await faultServer({ type: 'respond', body: 'ok' })
  closers.push(server)
  return server
}

it('headers given as a Headers or a Map are sent on every call, as fetch sends them', async () => {
  for (const headers of [
    new Headers({ authorization: 'Bearer t0ken' }),
    new Map([['authorization', 'Bearer t0ken']]),
  ]) {
    const server = await serve()
    await probe(server.url, { warmup: 1, samples: 2, headers })
    expect(server.records).toHaveLength(3)
    for (const r of server.records) {
      // Before: undefined — the probe sent no header at all.
      expect(r.headers['authorization'], headers.constructor.name).toBe('Bearer t0ken')
    }
  }
})

it('headers that are no record and no pairs (a string) are refused before anything is sent', async () => {
  const server = await serve()
  const error = await probe(server.url, {
    warmup: 0,
    samples: 1,
    headers: 'authorization: Bearer t0ken' as never,
  }).catch((e: unknown) => e)
  expect(error).toBeInstanceOf(TypeError)
  expect((error as Error).message).toBe(
    "headers must be a record of header values or [name, value] pairs, got 'authorization: Bearer t0ken' (a string)",
  )
  // Before: one call, with headers `0: a`, `1: u`, … and no Authorization.
  expect(server.records).toHaveLength(0)
})

it("freshConnections is true or false: 'false' is refused, not read as true", async () => {
  const server = await serve()
  for (const freshConnections of ['false', 0]) {
    const error = await probe(server.url, {
      warmup: 0,
      samples: 1,
      freshConnections: freshConnections as never,
    }).catch((e: unknown) => e)
    expect(error, String(freshConnections)).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(/^freshConnections must be true or false, got /)
  }
  expect(server.records).toHaveLength(0)
})

it('freshConnections: null is the default, a fresh connection for every call', async () => {
  const server = await serve()
  const result = await probe(server.url, {
    warmup: 1,
    samples: 3,
    freshConnections: null as never,
  })
  // Before: keep-alive calls — no measured call connected.
  expect(result.phases.connect?.samples).toBe(3)
})

it("onProgress is told of each of the probe's own calls as it ends, and nothing else", async () => {
  const server = await serve()
  const other = await serve()
  const seen: unknown[] = []
  const fetch = createFetch()
  // A fetch of the app's own, made while the probe runs, is no call of the probe's.
  const app: Promise<string>[] = []
  try {
    await probe(server.url, {
      warmup: 1,
      samples: 2,
      onProgress: (progress) => {
        seen.push(progress)
        app.push(fetch(other.url).then((res) => res.text()))
      },
    })
    expect(await Promise.all(app)).toEqual(['ok', 'ok', 'ok'])
  } finally {
    await fetch.close()
  }
  expect(seen).toEqual([
    { done: 1, total: 3, warmup: true },
    { done: 2, total: 3, warmup: false },
    { done: 3, total: 3, warmup: false },
  ])
})

it('onProgress that is no function is refused before anything is sent', async () => {
  const server = await serve()
  const error = await probe(server.url, { onProgress: 'dots' as never }).catch((e: unknown) => e)
  expect(error).toBeInstanceOf(TypeError)
  expect((error as Error).message).toMatch(/^onProgress must be a function, got /)
  expect(server.records).toHaveLength(0)
})
