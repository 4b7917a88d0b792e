import { getEventListeners } from 'node:events'
import {
  currentDeadline,
  Deadline,
  isDeadlineExceeded,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { type AgentToolContext, runTurns } from '../../src/agent/runTurns.js'
import { sideEffect } from '../../src/agent/sideEffect.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'
import { chatAnswer } from '../support/chatAnswer.js'

// A tool that never settles (a hung HTTP call without a timeout) held the
// whole run past its deadline, and a re-run of the operation — the README's
// recovery — joined the same never-settling run in `sideEffect` and hung
// for good. Tools now get the run's signal and deadline, are waited for no
// longer than them, and a re-run waits for the first run by its own deadline.

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

/** A model that asks for `lookup` once, then answers with the tool's result. */
const model = async (messages: ChatMessage[]): Promise<ChatResponse> => {
  const last = messages.at(-1)
  if (
    last?.role === 'tool' &&
    Array.isArray(last.content) &&
    last.content[0]?.type === 'tool_result'
  )
    return chatAnswer([{ type: 'text', text: `answer: ${last.content[0].content}` }])
  return chatAnswer([{ type: 'tool_call', id: 'call_1', name: 'lookup', arguments: { q: 1 } }])
}

describe('runTurns: a tool does not outlive the run', () => {
  it('a tool that never settles: the run fails with its deadline’s reason when it ends; the tool saw the signal and deadline', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(500, { clock })
    const seen: AgentToolContext[] = []
    const run = watch(
      runWithDeadline(deadline, () =>
        runTurns({
          operationId: 'hung-tool',
          messages: [{ role: 'user', content: 'go' }],
          call: model,
          store: new MemorySideEffectStore(),
          tools: {
            lookup: (_args, context) => {
              seen.push(context)
              return new Promise(() => {})
            },
          },
        }),
      ),
    )
    await flush()
    expect(seen).toHaveLength(1)
    expect(run.settled).toBe(false)
    clock.advance(500)
    await flush()
    expect(run.settled).toBe(true)
    expect(isDeadlineExceeded(run.error)).toBe(true)
    expect(run.error).toBe(deadline.reason)
    expect(seen[0]?.deadline).toBe(deadline)
    expect(seen[0]?.signal.aborted).toBe(true)
    expect(seen[0]?.signal.reason).toBe(deadline.reason)
  })

  it('the run’s signal ends a hung tool too, with its reason', async () => {
    const controller = new AbortController()
    const run = watch(
      runTurns({
        operationId: 'hung-tool-signal',
        messages: [{ role: 'user', content: 'go' }],
        call: model,
        store: new MemorySideEffectStore(),
        signal: controller.signal,
        tools: { lookup: () => new Promise(() => {}) },
      }),
    )
    await flush()
    expect(run.settled).toBe(false)
    const reason = new Error('the user left')
    controller.abort(reason)
    await flush()
    expect(run.error).toBe(reason)
  })

  it('a run whose signal aborts makes no further model call: it rejects with the reason, not MaxTurnsExceededError after every turn', async () => {
    const controller = new AbortController()
    const reason = new Error('the user left')
    const seen: AbortSignal[] = []
    const error = await runTurns({
      operationId: 'aborted-run',
      messages: [{ role: 'user', content: 'go' }],
      maxTurns: 5,
      store: new MemorySideEffectStore(),
      signal: controller.signal,
      // A model that keeps asking for a tool there is none of: no tool runs to notice the abort.
      call: async (_messages, info) => {
        seen.push(info.signal)
        controller.abort(reason)
        return chatAnswer([{ type: 'tool_call', id: 'c', name: 'missing', arguments: {} }])
      },
      tools: {},
    }).catch((e: unknown) => e)
    expect(error).toBe(reason)
    expect(seen).toHaveLength(1)
    // The call is given the run's signal to pass on (to callModel): it aborted with the reason.
    expect(seen[0]?.aborted).toBe(true)
    expect(seen[0]?.reason).toBe(reason)
  })

  it('a model call still running when the run’s signal aborts is no longer waited for; a run already ended calls no model', async () => {
    const controller = new AbortController()
    const reason = new Error('the user left')
    const run = watch(
      runTurns({
        operationId: 'hung-call',
        messages: [{ role: 'user', content: 'go' }],
        store: new MemorySideEffectStore(),
        signal: controller.signal,
        call: () => new Promise<ChatResponse>(() => {}),
        tools: {},
      }),
    )
    await flush()
    expect(run.settled).toBe(false)
    controller.abort(reason)
    await flush()
    expect(run.error).toBe(reason)

    const clock = new ManualClock()
    const deadline = Deadline.after(10, { clock })
    clock.advance(10)
    let calls = 0
    const late = await runTurns({
      operationId: 'late-run',
      messages: [{ role: 'user', content: 'go' }],
      store: new MemorySideEffectStore(),
      deadline,
      call: async () => {
        calls++
        return chatAnswer([{ type: 'text', text: 'hi' }])
      },
      tools: {},
    }).catch((e: unknown) => e)
    expect(late).toBe(deadline.reason)
    expect(calls).toBe(0)
  })

  it('a re-run of the operation while the first run’s tool is in flight waits for it by its own deadline, and never runs the tool twice', async () => {
    const clock = new ManualClock()
    const store = new MemorySideEffectStore({ clock })
    let invocations = 0
    let finish: (value: string) => void = () => {}
    const tools = {
      lookup: () => {
        invocations++
        return new Promise<string>((resolve) => {
          finish = resolve
        })
      },
    }
    const attempt = (ms: number) => {
      const deadline = Deadline.after(ms, { clock })
      const run = watch(
        runTurns({
          operationId: 'order-42',
          messages: [{ role: 'user', content: 'go' }],
          call: model,
          store,
          deadline,
          tools,
        }),
      )
      return { deadline, run }
    }

    const first = attempt(300)
    await flush()
    clock.advance(300)
    await flush()
    expect(first.run.error).toBe(first.deadline.reason)

    // Re-run while the first tool is still running: it joins that run.
    const second = attempt(1000)
    await flush()
    expect(second.run.settled).toBe(false)
    clock.advance(1000)
    await flush()
    expect(isDeadlineExceeded(second.run.error)).toBe(true)
    expect(second.run.error).toBe(second.deadline.reason)
    expect(invocations).toBe(1)

    // A re-run that the first run's tool completes in time for gets its result.
    const third = attempt(1000)
    await flush()
    expect(third.run.settled).toBe(false)
    finish('found')
    await flush()
    expect(third.run.error).toBeUndefined()
    expect(third.run.value?.response.text).toBe('answer: found')
    expect(invocations).toBe(1)

    // Once completed it is remembered: a later run does not call the tool.
    const fourth = attempt(1000)
    await flush()
    expect(fourth.run.value?.response.text).toBe('answer: found')
    expect(invocations).toBe(1)
  })
})

describe('runTurns under one request deadline', () => {
  it('a dozen runs at once add no abort listener to the deadline’s signal (Node warned of an EventTarget leak at 11); its end still stops each', async () => {
    const deadline = Deadline.after(60_000)
    let started = 0
    let allStarted!: () => void
    const twelve = new Promise<void>((resolve) => {
      allStarted = resolve
    })
    const signals: AbortSignal[] = []
    const runs = runWithDeadline(deadline, () =>
      Array.from({ length: 12 }, (_, i) =>
        runTurns({
          operationId: `fan-out-${i}`,
          messages: [{ role: 'user', content: 'hi' }],
          tools: {},
          store: new MemorySideEffectStore(),
          // A model call still running, told the run's signal.
          call: (_messages, { signal }) => {
            signals.push(signal)
            if (++started === 12) allStarted()
            return new Promise<ChatResponse>(() => {})
          },
        }),
      ),
    )
    await twelve
    expect(getEventListeners(deadline.signal, 'abort')).toHaveLength(0)
    const reason = new Error('the client left')
    deadline.cancel(reason)
    expect(signals.map((s) => s.reason)).toEqual(Array(12).fill(reason))
    const settled = await Promise.allSettled(runs)
    expect(settled.map((r) => (r.status === 'rejected' ? r.reason : r.status))).toEqual(
      Array(12).fill(reason),
    )
  })
})

describe('runTurns under one caller signal', () => {
  it('a dozen runs at once share one abort listener on the caller’s signal (one each warned of an EventTarget leak at 11); its abort still stops each', async () => {
    const controller = new AbortController()
    let started = 0
    let allStarted!: () => void
    const twelve = new Promise<void>((resolve) => {
      allStarted = resolve
    })
    const signals: AbortSignal[] = []
    const runs = Array.from({ length: 12 }, (_, i) =>
      runTurns({
        operationId: `fan-out-signal-${i}`,
        messages: [{ role: 'user', content: 'hi' }],
        tools: {},
        store: new MemorySideEffectStore(),
        deadline: false,
        signal: controller.signal,
        call: (_messages, { signal }) => {
          signals.push(signal)
          if (++started === 12) allStarted()
          return new Promise<ChatResponse>(() => {})
        },
      }),
    )
    await twelve
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    const reason = new Error('the user left')
    controller.abort(reason)
    expect(signals.map((s) => s.reason)).toEqual(Array(12).fill(reason))
    const settled = await Promise.allSettled(runs)
    expect(settled.map((r) => (r.status === 'rejected' ? r.reason : r.status))).toEqual(
      Array(12).fill(reason),
    )
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })
})

describe('runTurns({ deadline: false })', () => {
  it('is none through the whole run, as in core: under a spent ambient deadline the tool runs once, its calls unbounded', async () => {
    const spent = Deadline.after(0)
    const seen: Array<{ ambient: unknown; deadline: unknown; aborted: boolean }> = []
    const result = await runWithDeadline(spent, () =>
      runTurns({
        operationId: 'no-deadline',
        messages: [{ role: 'user', content: 'go' }],
        call: model,
        store: new MemorySideEffectStore(),
        deadline: false,
        tools: {
          lookup: (_args, context) => {
            seen.push({
              ambient: currentDeadline(),
              deadline: context.deadline,
              aborted: context.signal.aborted,
            })
            return 'found'
          },
        },
      }),
    )
    // Before: the tool never ran, and the model read "deadline exceeded".
    expect(result.response.text).toBe('answer: found')
    expect(seen).toEqual([{ ambient: undefined, deadline: undefined, aborted: false }])
  })
})

describe('sideEffect: a caller joining a run in progress', () => {
  it('waits no longer than its own signal, with its reason; the run goes on and is remembered', async () => {
    const store = new MemorySideEffectStore()
    let runs = 0
    let finish: (value: string) => void = () => {}
    const fn = () => {
      runs++
      return new Promise<string>((resolve) => {
        finish = resolve
      })
    }
    const first = watch(sideEffect('k', fn, { store }))
    const controller = new AbortController()
    const joined = watch(sideEffect('k', fn, { store, signal: controller.signal }))
    const reason = new Error('caller left')
    controller.abort(reason)
    await flush()
    expect(joined.error).toBe(reason)
    expect(first.settled).toBe(false)
    finish('done')
    await flush()
    expect(first.value).toBe('done')
    expect(await sideEffect('k', fn, { store })).toBe('done')
    expect(runs).toBe(1)
  })

  it('a caller whose deadline has already ended starts nothing', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(0, { clock })
    let runs = 0
    await expect(
      sideEffect(
        'k2',
        () => {
          runs++
          return 'sent'
        },
        { store: new MemorySideEffectStore(), deadline },
      ),
    ).rejects.toBe(deadline.reason)
    expect(runs).toBe(0)
  })
})
