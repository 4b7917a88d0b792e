import type { FakeProvider } from '@hourglass/testkit'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  keyLimitProblem,
  MAX_KEY_SEQUENCES,
  MAX_KEYS_PER_OBJECT,
} from '../src/http/jsonKeyLimit.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A body of a few MB made of hundreds of thousands of JSON keys cost the
 * gateway over a second of CPU per request (parse, schema, depth walk, the
 * text sent upstream: each a few µs per key of a huge object or per new
 * key name), so any client could keep a core busy. Such a body is refused
 * before it is parsed — 413 naming the limit, nothing sent — and a body
 * within the limits is answered. The guard counts work, not milliseconds:
 * the refusal says the body was never parsed or sent. 30,000 keys: well
 * past both limits, and a tenth of the bodies that showed the cost, so
 * the suite does not pay for building and sending 5 MB ones.
 */

/** An object of `n` distinct short keys (base 36: a 300,000-key body stays under 4 MiB). */
const keys = (n: number, from = 0) => {
  const o: Record<string, number> = {}
  for (let i = from; i < from + n; i++) o[i.toString(36)] = 1
  return o
}
const ok = { model: 'm', messages: [{ role: 'user', content: 'hi' }] }
const tool = (parameters: unknown) => ({ type: 'function', function: { name: 'f', parameters } })

describe('bodies made of many JSON keys', () => {
  let fake: FakeProvider
  let h: Harness
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['sk-keylimit-0001'])
    fake = p.fake
    h = await startHarness({ providers: { p: p.entry }, models: { m: fallback(['p', 'gpt-4o']) } })
  })
  afterAll(async () => {
    await h?.close()
    await fake?.close()
  })

  async function post(body: unknown) {
    const text = JSON.stringify(body)
    expect(text.length).toBeLessThan(4 * 1024 * 1024) // within maxBodyBytes: refused for its keys
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: text,
    })
    return {
      status: res.statusCode,
      retry: res.headers['x-should-retry'],
      error: ((await res.body.json()) as { error?: { code: string; message: string } }).error,
    }
  }

  const huge = keys(30_000)
  const refused: Array<[string, unknown]> = [
    ['an unknown extra field', { ...ok, x_extra: huge }],
    ['metadata', { ...ok, metadata: huge }],
    ["a tool's parameters schema", { ...ok, tools: [tool({ type: 'object', properties: huge })] }],
    ['messages[0]', { ...ok, messages: [{ role: 'user', content: 'hi', ...huge }] }],
  ]
  it.each(refused)(
    'a 30,000-key object in %s: 413 request_too_large naming the limit, never parsed nor sent',
    async (_where, body) => {
      const before = fake.requests.length
      const r = await post(body)
      expect(r.status).toBe(413)
      expect(r.error?.code).toBe('request_too_large')
      expect(r.error?.message).toContain(`more than ${MAX_KEYS_PER_OBJECT} keys`)
      expect(r.retry).toBe('false')
      expect(fake.requests.length).toBe(before)
    },
  )

  it('300 small objects whose 30,000 key names are all different: 413 naming the limit', async () => {
    const before = fake.requests.length
    const many = Array.from({ length: 300 }, (_, i) => keys(100, i * 100))
    const r = await post({ ...ok, x_extra: many })
    expect(r.status).toBe(413)
    expect(r.error?.message).toContain(`more than ${MAX_KEY_SEQUENCES} distinct sequences`)
    expect(fake.requests.length).toBe(before)
  })

  it('300 objects of 100 keys drawn from only 1,000 names, each a run of its own: 413 (within any cap on names)', async () => {
    const before = fake.requests.length
    const names = Array.from({ length: 1_000 }, (_, i) => `n${i}`)
    const many = Array.from({ length: 300 }, (_, j) =>
      Object.fromEntries(Array.from({ length: 100 }, (_, i) => [names[(j + i) % 1_000], 1])),
    )
    const r = await post({ ...ok, x_extra: many })
    expect(r.status).toBe(413)
    expect(r.error?.message).toContain(`more than ${MAX_KEY_SEQUENCES} distinct sequences`)
    expect(fake.requests.length).toBe(before)
  })

  it('48 objects of the same 9,999 keys (each a hash table to V8): 413, where one such object is answered', async () => {
    const before = fake.requests.length
    const big = keys(9_999)
    const r = await post({ ...ok, x_extra: Array.from({ length: 48 }, () => big) })
    expect(r.status).toBe(413)
    expect(r.error?.message).toContain(`more than ${MAX_KEY_SEQUENCES} distinct sequences`)
    expect(fake.requests.length).toBe(before)
  })

  it('a body at the limits is answered: an object of exactly the most keys, 20,000 messages repeating their names', async () => {
    const before = fake.requests.length
    const messages = Array.from({ length: 20_000 }, (_, i) => ({ role: 'user', content: `m${i}` }))
    const r = await post({
      ...ok,
      messages,
      tools: [tool({ type: 'object', properties: keys(MAX_KEYS_PER_OBJECT) })],
    })
    expect(r.status, JSON.stringify(r.error)).toBe(200)
    expect(fake.requests.length).toBe(before + 1)
  })
})

describe('keyLimitProblem counts keys, not what strings hold', () => {
  it('a message whose text looks like thousands of keys (quotes escaped, colons inside) is within the limits', () => {
    const text = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: '{"k": 1, "j\\\\": 2} a:b '.repeat(5_000) }],
    })
    expect(keyLimitProblem(text)).toBeUndefined()
  })

  it('keys with white space before their colon, or escapes in their names, still count', () => {
    const keys = Array.from({ length: MAX_KEYS_PER_OBJECT + 1 }, (_, i) => `"k\\"${i}" :\n1`)
    expect(keyLimitProblem(`{"extra": {${keys.join(', ')}}}`)).toContain(
      `more than ${MAX_KEYS_PER_OBJECT} keys`,
    )
    expect(keyLimitProblem(`{"extra": {${keys.slice(1).join(', ')}}}`)).toBeUndefined()
  })
})

describe('keyLimitProblem on a body of nothing but open braces', () => {
  it('keeps a bounded state: 4 MiB of { is left to JSON.parse, which refuses it at once', () => {
    const body = '{'.repeat(4 * 1024 * 1024)
    const cpu = process.cpuUsage()
    expect(keyLimitProblem(body)).toBeUndefined()
    // Three numbers a level, 12 million entries, took 1.5–2 s of CPU and
    // ~300 MB before; a counter past the depth followed takes milliseconds.
    // A guard against that blow-up, 20 times the margin, not a speed target.
    const { user, system } = process.cpuUsage(cpu)
    expect((user + system) / 1000).toBeLessThan(400)
  })
})
