import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * `hourglass_gateway_time_to_first_token_seconds` counts streams that wrote
 * a token, at that token. A stream whose provider sent its finish and no
 * token (an empty answer, a `content_filter` stop, a `length` stop spent
 * on silent thinking) has no first token: it was recorded at its finish, so
 * a filter's few ms, or a whole silent generation, read as a token's wait.
 */
let harness: Harness
let fake: FakeProvider
beforeAll(async () => {
  const p = await fakeProvider('openai', ['sk-ttft'])
  fake = p.fake
  harness = await startHarness({
    providers: { p: p.entry },
    models: { empty: fallback(['p', 'gpt-4o-mini']), worded: fallback(['p', 'gpt-4o']) },
  })
})
afterAll(async () => {
  await harness?.close()
  await fake?.close()
})

/** The histogram's `_count` or `_sum` for `model` (0 when it has no series). */
async function ttft(model: string, part: 'count' | 'sum' = 'count'): Promise<number> {
  const page = await (await fetch(`${harness.url}/metrics`)).text()
  const line = page
    .split('\n')
    .find(
      (l) =>
        l.startsWith(`hourglass_gateway_time_to_first_token_seconds_${part}{`) &&
        l.includes(`model="${model}"`),
    )
  return line === undefined ? 0 : Number(line.split(' ').at(-1))
}

/** `firstTextAt`: `performance.now()` when the first chunk with text reached this client. */
async function streamed(
  model: string,
): Promise<{ text: string; finish: string | null; firstTextAt?: number }> {
  const stream = await harness.client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  })
  let text = ''
  let finish: string | null = null
  let firstTextAt: number | undefined
  for await (const chunk of stream) {
    const content = chunk.choices[0]?.delta.content ?? ''
    if (content !== '' && firstTextAt === undefined) firstTextAt = performance.now()
    text += content
    finish = chunk.choices[0]?.finish_reason ?? finish
  }
  return firstTextAt === undefined ? { text, finish } : { text, finish, firstTextAt }
}

it('a stream that ended with no token records no time to first token', async () => {
  fake.enqueue(reply.text('', { finishReason: 'content_filter' }))
  fake.enqueue(reply.text('', { finishReason: 'length' }))
  expect(await streamed('empty')).toEqual({ text: '', finish: 'content_filter' })
  expect(await streamed('empty')).toEqual({ text: '', finish: 'length' })
  expect(await ttft('empty')).toBe(0)
})

it('a stream with a token records one, at it', async () => {
  // Six words 100 ms apart: the first token comes at once, the finish ~0.5 s
  // later. Taken at the finish (or the stream's end), the figure reads the
  // whole stream; at the first token, no more than this client's wait for
  // the first text, which the gateway wrote before it was read here (both
  // on `performance.now()`, in this one process). Not "under half the
  // whole stream": a stall of 0.5 s before the first token (a loaded box)
  // made the first token's wait more than half of it.
  fake.enqueue(reply.text('one two three four five six', { tokenDelayMs: 100 }))
  const started = performance.now()
  const { firstTextAt, ...answer } = await streamed('worded')
  expect(answer).toEqual({ text: 'one two three four five six', finish: 'stop' })
  expect(await ttft('worded')).toBe(1)
  expect(await ttft('worded', 'sum')).toBeLessThanOrEqual(((firstTextAt ?? 0) - started) / 1000)
})
