import { Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { faultServer } from '@hourglass/testkit'
import { SpanStatusCode } from '@opentelemetry/api'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A 302 the caller asked to get (`redirect: 'manual'`: an OAuth callback, a
 * presigned-URL hand-off) is its call's answer: its egress span is UNSET and
 * `egress.remaining` counts the attempt, but `calls.succeeded` left it out
 * as a hop fetch follows, so the call was in no series at all and a success
 * rate (succeeded / attempts) read it as a failure.
 */

const SUCCEEDED = 'hourglass.deadline.calls.succeeded'
let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  stop()
  await otel.shutdown()
})

type Init = Parameters<ReturnType<typeof createFetch>>[1]

async function call(path: string, init: Init = {}): Promise<number> {
  const upstream = await faultServer((req) =>
    req.url === '/login'
      ? { type: 'respond', status: 302, headers: { location: '/home' } }
      : req.url === '/nowhere'
        ? { type: 'respond', status: 302 }
        : { type: 'respond', status: 200, body: 'home' },
  )
  const fetch = createFetch({ retry: false })
  const deadline = Deadline.after(60_000, { clock: new ManualClock() })
  try {
    const res = await runWithDeadline(deadline, () => fetch(`${upstream.url}${path}`, init))
    await res.arrayBuffer()
    return res.status
  } finally {
    deadline.dispose()
    await fetch.close()
    await upstream.close()
  }
}

const succeeded = async () => (await otel.points(SUCCEEDED)).map((p) => [p.attributes, p.value])

it("redirect: 'manual' — the 302 is the answer: one success", async () => {
  expect(await call('/login', { redirect: 'manual' })).toBe(302)
  const spans = otel.exporter.getFinishedSpans().filter((s) => s.name === 'deadline.egress GET')
  expect(spans.map((s) => s.status.code)).toEqual([SpanStatusCode.UNSET])
  expect(await succeeded()).toEqual([
    [{ 'hourglass.deadline.attempt': 1, 'hourglass.deadline.call.kind': 'http' }, 1],
  ])
})

it('a 302 without a Location, which fetch returns as it is: one success', async () => {
  expect(await call('/nowhere')).toBe(302)
  expect(await succeeded()).toEqual([
    [{ 'hourglass.deadline.attempt': 1, 'hourglass.deadline.call.kind': 'http' }, 1],
  ])
})

it('a redirect fetch follows still counts once, on its target', async () => {
  expect(await call('/login')).toBe(200)
  expect(await succeeded()).toEqual([
    [{ 'hourglass.deadline.attempt': 1, 'hourglass.deadline.call.kind': 'http' }, 1],
  ])
})
