import { currentDeadline, Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { unreadableValues } from '../../../../test/support/unreadableValues.js'
import { canonicalJson, idempotencyKey } from '../../src/agent/idempotencyKey.js'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import type { SideEffectRecord, SideEffectStore } from '../../src/agent/SideEffectStore.js'
import { sideEffect } from '../../src/agent/sideEffect.js'
import { chatAnswer } from '../support/chatAnswer.js'

/** Lets settled promises run their callbacks (no time passes on the manual clock). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

/** What a promise has done so far, without waiting for it. */
function watch<T>(promise: Promise<T>) {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false }
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  )
  return state
}

describe('sideEffect', () => {
  it.each(Object.entries(unreadableValues))(
    'fn throwing %s: the caller gets that value, not an error of asking what it is',
    async (_, make) => {
      const thrown = make()
      const got = await sideEffect(
        'unreadable-throw',
        () => {
          throw thrown
        },
        { store: new MemorySideEffectStore() },
      ).then(
        () => ({ error: 'none' }),
        // Wrapped: a promise settled with a revoked Proxy reads its `then`.
        (error: unknown) => ({ error }),
      )
      // Before: a revoked Proxy made `instanceof` throw, and the caller got
      // that TypeError ("Cannot perform 'getPrototypeOf' on a proxy…").
      expect(got.error === thrown).toBe(true)
    },
  )

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

  it('returns the result once the side effect is done, not once a slow or hung store has recorded it', async () => {
    // A store whose write does not answer (a Redis client queueing commands
    // while Redis is down). The result used to wait for it: the email went
    // out, the caller failed by its deadline, and a re-run joined that run
    // and failed the same way.
    const clock = new ManualClock()
    const deadline = Deadline.after(1_000, { clock })
    const data = new Map<string, SideEffectRecord>()
    let finishWrite!: () => void
    let reads = 0
    const slowStore: SideEffectStore = {
      get: async (key) => {
        reads++
        return data.get(key)
      },
      set: (key, record) =>
        new Promise<void>((resolve) => {
          finishWrite = () => {
            data.set(key, record)
            resolve()
          }
        }),
    }
    let sent = 0
    const send = async () => ({ messageId: `m_${++sent}` })
    const first = watch(sideEffect('send-email-8', send, { store: slowStore, deadline }))
    await flush()
    expect(first.settled).toBe(true)
    expect(first.value).toEqual({ messageId: 'm_1' })
    // While the write is pending, the store does not know the run: this process does.
    expect(await sideEffect('send-email-8', send, { store: slowStore, deadline })).toEqual({
      messageId: 'm_1',
    })
    expect(reads).toBe(1)
    finishWrite()
    await flush()
    expect(await sideEffect('send-email-8', send, { store: slowStore, deadline })).toEqual({
      messageId: 'm_1',
    })
    expect(reads).toBe(2)
    expect(sent).toBe(1)
    expect(deadline.expired).toBe(false)
  })

  it('a store read that outlasts its caller starts nothing: no email sent for a caller that left, and the key is not held', async () => {
    // A store whose reads answer only when told to (a Redis client queueing
    // commands while Redis is down, then reconnecting).
    const clock = new ManualClock()
    const reads: Array<(record: SideEffectRecord | undefined) => void> = []
    const queued: SideEffectStore = {
      get: () =>
        new Promise((resolve) => {
          reads.push(resolve)
        }),
      set: () => {},
    }
    let sent = 0
    const send = async () => ({ messageId: `m_${++sent}` })
    const first = Deadline.after(100, { clock })
    const a = watch(sideEffect('send-email-10', send, { store: queued, deadline: first }))
    const b = watch(
      sideEffect('send-email-10', send, {
        store: queued,
        deadline: Deadline.after(1_000, { clock }),
      }),
    )
    await flush()
    expect(reads).toHaveLength(1)
    clock.advance(100)
    await flush()
    expect(a.error).toBe(first.reason)
    // The read answers after its caller left: nothing is sent for it.
    reads[0]!(undefined)
    await flush()
    expect(sent).toBe(0)
    // The caller that joined it, with time left, read again itself and was not failed.
    expect(b.settled).toBe(false)
    expect(reads).toHaveLength(2)
    reads[1]!(undefined)
    await flush()
    expect(b.value).toEqual({ messageId: 'm_1' })
    expect(sent).toBe(1)
  })

  it('reads a store’s null (a Redis GET for a missing key) as no record: the side effect runs, once', async () => {
    const data = new Map<string, SideEffectRecord>()
    const redisLike = {
      get: async (key: string) => data.get(key) ?? null,
      set: async (key: string, record: SideEffectRecord) => {
        data.set(key, record)
      },
    } as unknown as SideEffectStore
    let sent = 0
    const send = async () => ({ messageId: `m_${++sent}` })
    expect(await sideEffect('send-email-9', send, { store: redisLike })).toEqual({
      messageId: 'm_1',
    })
    expect(await sideEffect('send-email-9', send, { store: redisLike })).toEqual({
      messageId: 'm_1',
    })
    expect(sent).toBe(1)
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

  it('refuses a negative ttlMs (a TTL computed past its expiry), which remembered nothing: the retry sent the email again', async () => {
    const store = new MemorySideEffectStore()
    let sent = 0
    const send = () => ++sent
    const run = () => sideEffect('send-email', send, { store, ttlMs: -1 })
    expect(run).toThrow(RangeError)
    expect(run).toThrow(/ttlMs must be a number ≥ 0, got -1/)
    expect(sent).toBe(0)
    // Infinity (as long as the store keeps it) and 0 (only concurrent callers share the run) still hold.
    expect(await sideEffect('kept', send, { store, ttlMs: Number.POSITIVE_INFINITY })).toBe(1)
    expect(await sideEffect('kept', send, { store, ttlMs: Number.POSITIVE_INFINITY })).toBe(1)
    expect(await sideEffect('once', send, { store, ttlMs: 0 })).toBe(2)
  })

  it('a call with its own key from inside its run is part of that run: fn runs once, instead of the run waiting for itself', async () => {
    // A `runTurns` tool wrapping its work in `sideEffect(context.key, fn, context)`
    // (below), or one helper inside another, a → b → a: joined, the inner call
    // waited for the run it is part of, `fn` never ran and the caller hung
    // until its deadline — for ever without one.
    const clock = new ManualClock()
    const deadline = Deadline.after(1000, { clock })
    const store = new MemorySideEffectStore()
    let sent = 0
    const send = () => sideEffect('email', async () => `sent ${++sent}`, { store, deadline })
    const outer = watch(sideEffect('email', send, { store, deadline }))
    await flush()
    expect(outer).toEqual({ settled: true, value: 'sent 1' })
    expect(sent).toBe(1)
    // Remembered as the one run of its key.
    expect(await sideEffect('email', send, { store, deadline })).toBe('sent 1')
    const nested = watch(
      sideEffect(
        'a',
        () =>
          sideEffect('b', () => sideEffect('a', () => 'inner a', { store, deadline }), {
            store,
            deadline,
          }),
        {
          store,
          deadline,
        },
      ),
    )
    await flush()
    expect(nested).toEqual({ settled: true, value: 'inner a' })
  })

  it("an inner call under the run's own key whose caller ran out of time keeps the run in progress: the next caller joins, fn runs once", async () => {
    // Bounded by its caller's deadline, the inner call failed the run while
    // its fn went on: the run was forgotten, and the next caller with time
    // left started the work a second time ('sent 2').
    const clock = new ManualClock()
    const store = new MemorySideEffectStore()
    let started = 0
    let open: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    // Ignores its deadline, as work that cannot be stopped does.
    const slow = async () => {
      started++
      await gate
      return `sent ${started}`
    }
    const outer = (deadline: Deadline) =>
      sideEffect('k', () => sideEffect('k', slow, { store, deadline }), { store, deadline })
    const first = outer(Deadline.after(100, { clock }))
    first.catch(() => {})
    await flush()
    clock.advance(200)
    await flush()
    await expect(first).rejects.toThrow()
    const second = watch(outer(Deadline.after(1000, { clock })))
    await flush()
    open()
    await flush()
    await flush()
    expect(started).toBe(1)
    expect(second).toEqual({ settled: true, value: 'sent 1' })
  })

  it('a runTurns tool that wraps its work in sideEffect(context.key, fn, context) runs it once and the run answers', async () => {
    let sent = 0
    const clock = new ManualClock()
    const run = watch(
      runTurns({
        operationId: 'tool-wraps-itself',
        messages: [{ role: 'user', content: 'send it' }],
        // None given, as the tool's own call gives none: both use the process's store.
        deadline: Deadline.after(1000, { clock }),
        call: async (messages) => {
          const last = messages.at(-1)?.content
          if (Array.isArray(last) && last[0]?.type === 'tool_result')
            return chatAnswer([{ type: 'text', text: `done: ${last[0].content}` }])
          return chatAnswer([{ type: 'tool_call', id: 'c1', name: 'send', arguments: { to: 'a' } }])
        },
        tools: {
          send: (_args, context) =>
            sideEffect(context.key, async () => `message ${++sent}`, context),
        },
      }),
    )
    await flush()
    expect(run.settled).toBe(true)
    expect(run.value?.response.text).toBe('done: message 1')
    expect(sent).toBe(1)
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

  it('refuses a Map or a Set, which JSON writes as {} whatever it holds: two operations would share one key', () => {
    for (const args of [new Map([['to', 'ana']]), new Set(['ana']), { nested: [new Map()] }]) {
      expect(() => idempotencyKey({ operation: 'op', args })).toThrow(
        /canonicalJson: a (Map|Set) is written as \{\} whatever it holds/,
      )
    }
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
  it('deadline: false is none, as in core: the ambient deadline, spent, neither refuses the run nor bounds fn', async () => {
    const store = new MemorySideEffectStore()
    const spent = Deadline.after(0)
    let runs = 0
    const result = await runWithDeadline(spent, () =>
      sideEffect(
        'none',
        async () => {
          runs++
          // What fn's own calls (a fetch, a callModel) would be bounded by.
          return currentDeadline() === undefined ? 'unbounded' : 'under the spent deadline'
        },
        { store, deadline: false },
      ),
    )
    expect(result).toBe('unbounded')
    expect(runs).toBe(1)
  })
})
