import { ManualClock } from '@hourglass/core'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type LogRecord, type RunningGateway, startGateway } from '../src/index.js'
import { fakeProvider, fallback } from './support/harness.js'

// `x-deadline-expired: 1` tells the caller its own budget is gone too (do
// not retry). The gateway's 504 sent it for every deadline, its own cap's
// too: `maxMs` below what the caller sent, `defaultMs` when it sent none —
// a caller 1 s into its 5 s took the 504 for its own expiry and gave up.
// Now it follows @hourglass/express's rule (`callersBudget(req)`); the log
// and the metrics still call each one `deadline_exceeded`.

/** A counter's value on a Prometheus page (0 when absent). */
function counter(page: string, name: string): number {
  const line = page.split('\n').find((l) => l.startsWith(`${name} `))
  return line === undefined ? 0 : Number(line.slice(name.length + 1))
}

describe("the gateway's deadline 504 says the caller's budget is gone only when it was the caller's", () => {
  let fake: FakeProvider | undefined
  let running: RunningGateway | undefined
  afterEach(async () => {
    await running?.close()
    await fake?.close()
    fake = running = undefined
  })

  it.each([
    { whose: 'defaultMs (the caller sent none)', headers: {}, marked: null },
    {
      whose: 'maxMs (the caller sent 5 s)',
      headers: { 'x-deadline-remaining-ms': '5000' },
      marked: null,
    },
    { whose: "the caller's own 1 s", headers: { 'x-deadline-remaining-ms': '1000' }, marked: '1' },
  ])('the budget of $whose', async ({ headers, marked }) => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    fake.setReply(reply.hang())
    const clock = new ManualClock()
    const lines: LogRecord[] = []
    running = await startGateway({
      port: 0,
      clock,
      config: {
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'gpt']) },
        deadline: { defaultMs: 1000, maxMs: 1000, reserveMs: 10 },
      },
      logger: (record) => void (record['event'] === 'request' && lines.push(record)),
    })
    const answer = fetch(`${running.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    const hung = fake
    await vi.waitFor(() => expect(hung.requests).toHaveLength(1), { timeout: 10_000 })
    clock.advance(1000)
    const res = await answer
    expect([
      res.status,
      res.headers.get('x-deadline-expired'),
      res.headers.get('x-should-retry'),
      ((await res.json()) as { error: { code: string } }).error.code,
    ]).toEqual([504, marked, 'false', 'deadline_exceeded'])
    await vi.waitFor(() => expect(lines).toHaveLength(1), { timeout: 10_000 })
    expect(lines[0]).toEqual(expect.objectContaining({ status: 504, error: 'deadline_exceeded' }))
    const page = await (await fetch(`${running.url}/metrics`)).text()
    expect(counter(page, 'hourglass_gateway_deadline_expiries_total')).toBe(1)
  })
})
