import { isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { probe } from '../src/index.js'

// probe()'s calls were bounded only by the phase limits (10 s for the
// headers, then 10 s between body chunks), whatever budget the probe was
// for. `callTimeoutMs` bounds each call. The time here is a ManualClock's:
// nothing waits for real time.

let server: FaultServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

it('a call still running after callTimeoutMs is abandoned: the probe rejects with DeadlineExceededError and the connection is closed', async () => {
  server = await faultServer({ type: 'hang' })
  const clock = new ManualClock()
  const probing = probe(server.url, { warmup: 0, samples: 3, callTimeoutMs: 500, clock })
  const failure = probing.catch((error: unknown) => error)
  await server.request(0)
  clock.advance(499)
  const early = await Promise.race([failure, new Promise((resolve) => setImmediate(resolve))])
  expect(early).toBeUndefined()
  clock.advance(1)
  expect(isDeadlineExceeded(await failure)).toBe(true)
  await server.clientGone(0)
  // The first call failing ends the probe: no other call was made.
  expect(server.records).toHaveLength(1)
  // A signal, not a deadline: the endpoint is not told a budget.
  expect(server.records[0]!.headers['x-deadline-remaining-ms']).toBeUndefined()
})

it('callTimeoutMs is a finite number > 0, refused naming it (RangeError for a number, TypeError for a string)', async () => {
  for (const callTimeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '500']) {
    const refused = probe('http://127.0.0.1:1/', { callTimeoutMs: callTimeoutMs as number })
    await expect(refused, String(callTimeoutMs)).rejects.toThrow(
      /^callTimeoutMs must be a finite number > 0 \(ms\), got /,
    )
    await expect(refused, String(callTimeoutMs)).rejects.toBeInstanceOf(
      typeof callTimeoutMs === 'number' ? RangeError : TypeError,
    )
  }
})

it('under callTimeoutMs no phase limit of fetch’s cuts a call first: a 15 s bound waits past the 10 s headers default', async () => {
  server = await faultServer({ type: 'hang' })
  const clock = new ManualClock()
  const probing = probe(server.url, { warmup: 0, samples: 1, callTimeoutMs: 15_000, clock })
  const failure = probing.catch((error: unknown) => error)
  await server.request(0)
  clock.advance(14_999)
  const early = await Promise.race([failure, new Promise((resolve) => setImmediate(resolve))])
  expect(early).toBeUndefined()
  clock.advance(1)
  expect(isDeadlineExceeded(await failure)).toBe(true)
})

it('a phase limit given with callTimeoutMs still applies', async () => {
  server = await faultServer({ type: 'hang' })
  const clock = new ManualClock()
  const probing = probe(server.url, {
    warmup: 0,
    samples: 1,
    callTimeoutMs: 15_000,
    headersTimeoutMs: 2000,
    clock,
  })
  const failure = probing.catch((error: unknown) => error)
  await server.request(0)
  clock.advance(2000)
  expect(await failure).toMatchObject({ code: 'HEADERS_TIMEOUT' })
})
