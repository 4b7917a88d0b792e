import { reply } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

let harness: Harness | undefined
const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()))
  harness = undefined
})

it('a drain that cuts a stream off is a failed attempt, not a client that left', async () => {
  const { fake, entry } = await fakeProvider('openai', ['k-1'])
  closers.push(() => fake.close())
  harness = await startHarness(
    { providers: { p: entry }, models: { m: fallback(['p', 'x']) } },
    { logLevel: 'debug', drainTimeoutMs: 50 },
  )
  fake.enqueue(reply.text(Array.from({ length: 60 }, (_, i) => ` w${i}`).join(''), { tokenDelayMs: 40 }))
  const stream = await harness.client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  })
  const it = stream[Symbol.asyncIterator]()
  await it.next()
  const page = await (await fetch(`${harness.url}/metrics`)).text()
  void page
  const closing = harness.running.close()
  try {
    for (;;) if ((await it.next()).done) break
  } catch {}
  await closing
  console.log(JSON.stringify(harness.logs.filter((l) => l.event === 'attempt' || l.event === 'request')))
  expect(harness.logs.filter((l) => l.event === 'attempt')).toMatchObject([
    { level: 'warn', decision: 'fail' },
  ])
})
