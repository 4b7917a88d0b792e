import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { canonicalJson, idempotencyKey } from '../../src/agent/idempotencyKey.js'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import type { SideEffectRecord, SideEffectStore } from '../../src/agent/SideEffectStore.js'
import { sideEffect } from '../../src/agent/sideEffect.js'

describe('sideEffect', () => {
  it('a retried agent turn does not send the email twice', async () => {
    const store = new MemorySideEffectStore()
    const sent: string[] = []
    const sendEmail = async (to: string, idemKey: string) => {
      sent.push(to)
      return { messageId: `m-${sent.length}`, idemKey }
    }
    const turn = (attempt: number) =>
      sideEffect(
        idempotencyKey({
          conversationId: 'c-1',
          tool: 'send_email',
          args: { to: 'a@example.com', body: 'hi' },
        }),
        (key) => sendEmail('a@example.com', key),
        { store },
      ).then((r) => ({ ...r, attempt }))
    const first = await turn(1)
    const second = await turn(2)
    expect(sent).toEqual(['a@example.com'])
    expect(second.messageId).toBe(first.messageId)
    expect(second.idemKey).toBe(first.idemKey)
  })

  it('concurrent callers with the same key share one run', async () => {
    const store = new MemorySideEffectStore()
    let runs = 0
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const fn = async () => {
      runs++
      await gate
      return runs
    }
    const all = Promise.all(Array.from({ length: 20 }, () => sideEffect('k', fn, { store })))
    release()
    expect(await all).toEqual(new Array(20).fill(1))
    expect(runs).toBe(1)
  })

  it('a failure is not remembered: every caller sharing the run sees it, the next call runs again', async () => {
    const store = new MemorySideEffectStore()
    let runs = 0
    const flaky = async () => {
      runs++
      if (runs === 1) throw new Error('smtp down')
      return 'sent'
    }
    const [a, b] = await Promise.allSettled([
      sideEffect('k', flaky, { store }),
      sideEffect('k', flaky, { store }),
    ])
    expect(a).toMatchObject({ status: 'rejected', reason: { message: 'smtp down' } })
    expect(b).toMatchObject({ status: 'rejected', reason: { message: 'smtp down' } })
    expect(await sideEffect('k', flaky, { store })).toBe('sent')
    expect(await sideEffect('k', flaky, { store })).toBe('sent')
    expect(runs).toBe(2)
  })

  it('different keys run separately', async () => {
    const store = new MemorySideEffectStore()
    let runs = 0
    await sideEffect('a', () => ++runs, { store })
    await sideEffect('b', () => ++runs, { store })
    expect(runs).toBe(2)
  })

  it('forgets a completed run after ttlMs, and ttlMs 0 remembers nothing once done', async () => {
    const clock = new ManualClock()
    const store = new MemorySideEffectStore({ clock })
    let runs = 0
    const fn = () => ++runs
    expect(await sideEffect('k', fn, { store, ttlMs: 1000 })).toBe(1)
    clock.advance(999)
    expect(await sideEffect('k', fn, { store, ttlMs: 1000 })).toBe(1)
    clock.advance(1)
    expect(await sideEffect('k', fn, { store, ttlMs: 1000 })).toBe(2)
    expect(await sideEffect('z', fn, { store, ttlMs: 0 })).toBe(3)
    expect(await sideEffect('z', fn, { store, ttlMs: 0 })).toBe(4)
  })

  it('sweeps expired entries on write, so the memory store stays bounded', async () => {
    const clock = new ManualClock()
    const store = new MemorySideEffectStore({ clock })
    for (let i = 0; i < 100; i++) await sideEffect(`k${i}`, () => i, { store, ttlMs: 10 })
    expect(store.size).toBe(100)
    clock.advance(10)
    await sideEffect('fresh', () => 0, { store, ttlMs: 10 })
    expect(store.size).toBe(1)
  })

  it('works with a pluggable async store (what a Redis store looks like)', async () => {
    const data = new Map<string, string>()
    const jsonStore: SideEffectStore = {
      async get(key) {
        const raw = data.get(key)
        return raw === undefined ? undefined : (JSON.parse(raw) as SideEffectRecord)
      },
      async set(key, record) {
        data.set(key, JSON.stringify(record))
      },
    }
    let runs = 0
    const charge = async () => ({ chargeId: `ch_${++runs}` })
    expect(await sideEffect('pay-1', charge, { store: jsonStore })).toEqual({ chargeId: 'ch_1' })
    expect(await sideEffect('pay-1', charge, { store: jsonStore })).toEqual({ chargeId: 'ch_1' })
    expect(runs).toBe(1)
    expect(JSON.parse(data.get('pay-1')!)).toMatchObject({ value: { chargeId: 'ch_1' } })
  })

  it('a run its store fails to record still returns its result, and this process does not run it again', async () => {
    let writes = 0
    const downStore: SideEffectStore = {
      get: async () => undefined,
      set: async () => {
        writes++
        throw new Error('store unavailable')
      },
    }
    let sent = 0
    const send = async () => ({ messageId: `m_${++sent}` })
    // The email went out: the agent gets its result, not the store's error
    // (which would make its model call the tool again).
    expect(await sideEffect('send-email-7', send, { store: downStore })).toEqual({
      messageId: 'm_1',
    })
    expect(await sideEffect('send-email-7', send, { store: downStore })).toEqual({
      messageId: 'm_1',
    })
    expect(sent).toBe(1)
    expect(writes).toBe(1)
  })

  it('refuses an empty key', () => {
    expect(() => sideEffect('', () => 1)).toThrow(/non-empty/)
  })

  it('refuses a NaN ttlMs, which would remember nothing and let the next call run the side effect again', async () => {
    const store = new MemorySideEffectStore()
    let sent = 0
    const send = () => ++sent
    const run = () => sideEffect('send-email', send, { store, ttlMs: Number.NaN })
    expect(run).toThrow(RangeError)
    expect(run).toThrow(/ttlMs/)
    expect(sent).toBe(0)
  })
})

describe('idempotencyKey', () => {
  it('is stable under key order and changes with any argument', () => {
    const a = idempotencyKey({
      conversationId: 'c',
      tool: 't',
      args: { x: 1, y: [1, { b: 2, a: 1 }] },
    })
    const b = idempotencyKey({
      args: { y: [1, { a: 1, b: 2 }], x: 1 },
      tool: 't',
      conversationId: 'c',
    })
    const c = idempotencyKey({
      conversationId: 'c',
      tool: 't',
      args: { x: 2, y: [1, { a: 1, b: 2 }] },
    })
    expect(a).toBe(b)
    expect(a).not.toBe(c)
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  it('refuses parts named after the attempt: a key per attempt defeats the point', () => {
    expect(() => idempotencyKey({ conversationId: 'c', attempt: 2 })).toThrow(/attempt counter/)
    expect(() => idempotencyKey({ retryCount: 1 })).toThrow(TypeError)
  })

  it('follows JSON: undefined dropped from objects, null in arrays, toJSON honoured; cycles refused', () => {
    expect(canonicalJson({ b: undefined, a: [undefined, new Date(0)] })).toBe(
      '{"a":[null,"1970-01-01T00:00:00.000Z"]}',
    )
    const loop: Record<string, unknown> = {}
    loop['self'] = loop
    expect(() => canonicalJson(loop)).toThrow(/circular/)
    expect(canonicalJson({ s: [1, 1] })).toBe('{"s":[1,1]}')
  })
})
