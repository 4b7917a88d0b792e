import { setTimeout as sleep } from 'node:timers/promises'
import {
  ClientClosedError,
  currentDeadline,
  Deadline,
  DeadlineExceededError,
  expiryError,
  isClientClosed,
  isDeadlineExceeded,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import { sideEffect } from '../../src/agent/sideEffect.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'
import { chatAnswer } from '../support/chatAnswer.js'

/** `Promise.withResolvers` for Node 20. */
function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/**
 * `fn` runs under the deadline of the caller that starts it: when that
 * caller's client leaves or its time ends, what `fn` started (a fetch) is
 * aborted with that deadline's reason. A caller that joined the run with
 * time left used to get the starter's reason — a `ClientClosedError` its
 * route answered with a 502 for a client still waiting, or a
 * `DeadlineExceededError` (a 504 with most of its time left). It starts a
 * run of its own instead.
 */
describe('sideEffect: a run stopped for the caller that started it', () => {
  /**
   * A tool whose first run does what a fetch does: waits on the ambient
   * deadline's signal and fails with its reason (`wrap`: Node's `AbortError`
   * whose cause is that reason). Later runs answer.
   */
  function tool(wrap = false) {
    const deadlines: Array<Deadline | undefined> = []
    const firstStarted = deferred()
    const fn = async (key: string) => {
      const deadline = currentDeadline()
      deadlines.push(deadline)
      if (deadlines.length > 1) return `sent by run ${deadlines.length} (${key})`
      firstStarted.resolve()
      const signal = deadline!.signal
      // timers/promises throws Node's AbortError, the signal's reason its cause.
      if (wrap) await sleep(600_000, undefined, { signal })
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
      throw signal.reason
    }
    return { fn, deadlines, firstStarted: firstStarted.promise }
  }

  it.each([
    ['its client left (cancelled with ClientClosedError)', false],
    ["its client left, the reason in the error's cause (Node's AbortError)", true],
  ])('%s: a joiner with time left gets the result of a run of its own', async (_name, wrap) => {
    const store = new MemorySideEffectStore()
    const { fn, deadlines, firstStarted } = tool(wrap)
    const starterDeadline = Deadline.after(60_000)
    const joinerDeadline = Deadline.after(600_000)
    const starter = runWithDeadline(starterDeadline, () => sideEffect('send', fn, { store }))
    starter.catch(() => {})
    const joiner = runWithDeadline(joinerDeadline, () => sideEffect('send', fn, { store }))
    await firstStarted
    const left = new ClientClosedError()
    starterDeadline.cancel(left)

    await expect(starter).rejects.toBe(left)
    expect(await joiner).toBe('sent by run 2 (send)')
    expect(deadlines).toEqual([starterDeadline, joinerDeadline])
    // Its run completed: remembered, a later call runs nothing.
    expect(await sideEffect('send', fn, { store, deadline: false })).toBe('sent by run 2 (send)')
    expect(deadlines).toHaveLength(2)
    starterDeadline.dispose()
    joinerDeadline.dispose()
  })

  it("the starter's deadline ran out: the joiner with time left runs its own, not a 504 with its time left", async () => {
    const clock = new ManualClock()
    const store = new MemorySideEffectStore()
    const { fn, deadlines, firstStarted } = tool()
    const starterDeadline = Deadline.after(100, { clock })
    const joinerDeadline = Deadline.after(10_000, { clock })
    const starter = runWithDeadline(starterDeadline, () => sideEffect('send', fn, { store }))
    starter.catch(() => {})
    const joiner = runWithDeadline(joinerDeadline, () => sideEffect('send', fn, { store }))
    await firstStarted
    clock.advance(100)

    const ended = await starter.then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isDeadlineExceeded(ended)).toBe(true)
    expect(await joiner).toBe('sent by run 2 (send)')
    expect(deadlines).toEqual([starterDeadline, joinerDeadline])
    joinerDeadline.dispose()
  })

  it('a run that fails for a reason of its own still goes to every caller sharing it, run once', async () => {
    const store = new MemorySideEffectStore()
    let runs = 0
    const started = deferred()
    const release = deferred()
    const fn = async () => {
      runs++
      started.resolve()
      await release.promise
      throw new Error('smtp down')
    }
    const starterDeadline = Deadline.after(60_000)
    const joinerDeadline = Deadline.after(600_000)
    const starter = runWithDeadline(starterDeadline, () => sideEffect('send', fn, { store }))
    const joiner = runWithDeadline(joinerDeadline, () => sideEffect('send', fn, { store }))
    await started.promise
    // The starter's client left too, but the run failed for a reason of its own.
    starterDeadline.cancel(new ClientClosedError())
    release.resolve()
    await expect(starter).rejects.toSatisfy(isClientClosed)
    await expect(joiner).rejects.toThrow('smtp down')
    expect(runs).toBe(1)
    joinerDeadline.dispose()
  })

  it("a joiner whose own time ended with the starter's gets that reason, and starts nothing", async () => {
    const store = new MemorySideEffectStore()
    const { fn, deadlines, firstStarted } = tool()
    const shared = Deadline.after(60_000)
    // Two identical calls under one request's deadline.
    const starter = runWithDeadline(shared, () => sideEffect('send', fn, { store }))
    const joiner = runWithDeadline(shared, () => sideEffect('send', fn, { store }))
    await firstStarted
    const left = new ClientClosedError()
    shared.cancel(left)
    await expect(starter).rejects.toBe(left)
    await expect(joiner).rejects.toBe(left)
    expect(deadlines).toHaveLength(1)
  })

  it('a joiner given a signal of its own, whose starter was stopped, runs its own too', async () => {
    const store = new MemorySideEffectStore()
    const { fn, deadlines, firstStarted } = tool()
    const starterDeadline = Deadline.after(60_000)
    const starter = runWithDeadline(starterDeadline, () => sideEffect('send', fn, { store }))
    starter.catch(() => {})
    const joiner = sideEffect('send', fn, {
      store,
      deadline: false,
      signal: new AbortController().signal,
    })
    await firstStarted
    starterDeadline.cancel(new DeadlineExceededError({ budgetMs: 60_000, elapsedMs: 60_000 }))
    expect(await joiner).toBe('sent by run 2 (send)')
    expect(deadlines).toEqual([starterDeadline, undefined])
  })
  it('refused for lack of the starter’s budget before its deadline’s timer ran: a joiner with time left runs its own', async () => {
    // What @hourglass/fetch does when the starter's budget is spent (its
    // minBudgetMs, or fn's synchronous part used it up): an expiry error
    // made for that deadline — which has no reason yet. The joiner, seconds
    // left, was handed it: a 504 for the starter's deadline.
    const clock = new ManualClock()
    const store = new MemorySideEffectStore()
    const deadlines: Array<Deadline | undefined> = []
    const firstStarted = deferred()
    const refuse = deferred()
    const fn = async () => {
      const deadline = currentDeadline()
      deadlines.push(deadline)
      if (deadlines.length > 1) return 'sent by the joiner’s run'
      firstStarted.resolve()
      await refuse.promise
      throw expiryError(deadline!)
    }
    const starterDeadline = Deadline.after(300, { clock })
    const joinerDeadline = Deadline.after(5000, { clock })
    const starter = runWithDeadline(starterDeadline, () => sideEffect('send', fn, { store }))
    starter.catch(() => {})
    const joiner = runWithDeadline(joinerDeadline, () => sideEffect('send', fn, { store }))
    await firstStarted
    refuse.resolve()
    await expect(starter).rejects.toSatisfy(isDeadlineExceeded)
    expect(starterDeadline.reason).toBeUndefined()
    expect(await joiner).toBe('sent by the joiner’s run')
    expect(deadlines).toEqual([starterDeadline, joinerDeadline])
    starterDeadline.dispose()
    joinerDeadline.dispose()
  })

  /**
   * How node-fetch, axios-style clients and hand-written code honour a
   * signal: they reject with an `AbortError` of their own, without the
   * signal's reason as its cause. Nothing in it names the starter's deadline.
   */
  const ownAbort = () => new DOMException('The operation was aborted.', 'AbortError')

  /** axios 1.x rejects so when its `signal` aborts (`CanceledError`: name, code, `__CANCEL__`). */
  const axiosCancel = () =>
    Object.assign(new Error('canceled'), {
      name: 'CanceledError',
      code: 'ERR_CANCELED',
      __CANCEL__: true,
    })
  /** got's `CancelError`. */
  const gotCancel = () =>
    Object.assign(new Error('Promise was canceled'), { name: 'CancelError', code: 'ERR_CANCELED' })

  it.each([
    ['an AbortError', ownAbort],
    ["axios's CanceledError", axiosCancel],
    ["got's CancelError", gotCancel],
  ])(
    "the starter's deadline ran out and fn rejected with %s of its own (no cause): the joiner with time left runs its own",
    async (_name, cancelError) => {
      const clock = new ManualClock()
      const store = new MemorySideEffectStore()
      const deadlines: Array<Deadline | undefined> = []
      const firstStarted = deferred()
      const fn = (key: string) =>
        new Promise<string>((resolve, reject) => {
          const deadline = currentDeadline()
          deadlines.push(deadline)
          if (deadlines.length > 1) return resolve(`sent by run ${deadlines.length} (${key})`)
          firstStarted.resolve()
          deadline!.signal.addEventListener('abort', () => reject(cancelError()), { once: true })
        })
      const starterDeadline = Deadline.after(100, { clock })
      const joinerDeadline = Deadline.after(3000, { clock })
      const starter = runWithDeadline(starterDeadline, () => sideEffect('email-1', fn, { store }))
      starter.catch(() => {})
      const joiner = runWithDeadline(joinerDeadline, () => sideEffect('email-1', fn, { store }))
      await firstStarted.promise
      clock.advance(100)

      await expect(starter).rejects.toSatisfy(isDeadlineExceeded)
      expect(await joiner).toBe('sent by run 2 (email-1)')
      expect(deadlines).toEqual([starterDeadline, joinerDeadline])
      joinerDeadline.dispose()
    },
  )

  it('an AbortError of fn’s own while the starter still has time is fn’s failure: the joiner gets it, nothing runs again', async () => {
    const store = new MemorySideEffectStore()
    let runs = 0
    const started = deferred()
    const release = deferred()
    const fn = async () => {
      runs++
      started.resolve()
      await release.promise
      throw ownAbort()
    }
    const starterDeadline = Deadline.after(60_000)
    const joinerDeadline = Deadline.after(600_000)
    const starter = runWithDeadline(starterDeadline, () => sideEffect('send', fn, { store }))
    const joiner = runWithDeadline(joinerDeadline, () => sideEffect('send', fn, { store }))
    await started.promise
    release.resolve()
    await expect(starter).rejects.toThrow('The operation was aborted.')
    await expect(joiner).rejects.toThrow('The operation was aborted.')
    expect(runs).toBe(1)
    starterDeadline.dispose()
    joinerDeadline.dispose()
  })

  it("through runTurns: run A's deadline ends, its tool rejects with an AbortError of its own on ctx.signal; run B (time left) sends the email and its model is told so", async () => {
    const clock = new ManualClock()
    const store = new MemorySideEffectStore()
    const answer = chatAnswer
    const call = async (messages: ChatMessage[]): Promise<ChatResponse> => {
      const last = messages.at(-1)
      const result =
        last?.role === 'tool' && Array.isArray(last.content) ? last.content[0] : undefined
      if (result?.type === 'tool_result') {
        return answer([{ type: 'text', text: `done: ${result.content}` }])
      }
      return answer([{ type: 'tool_call', id: 'c', name: 'send_email', arguments: { to: 'y' } }])
    }
    let starts = 0
    let sent = 0
    const firstStarted = deferred()
    const sendEmail = (_args: unknown, context: { signal: AbortSignal }) =>
      new Promise<{ id: string }>((resolve, reject) => {
        starts++
        if (starts > 1) {
          sent++
          return resolve({ id: `m${starts}` })
        }
        firstStarted.resolve()
        context.signal.addEventListener('abort', () => reject(ownAbort()), { once: true })
      })
    const runA = Deadline.after(120, { clock })
    const runB = Deadline.after(3000, { clock })
    const options = {
      operationId: 'op-email',
      messages: [{ role: 'user' as const, content: 'mail y' }],
      call,
      store,
      tools: { send_email: sendEmail },
    }
    const a = runTurns({ ...options, deadline: runA })
    a.catch(() => {})
    await firstStarted.promise
    const b = runTurns({ ...options, deadline: runB })
    // B reaches the tool call and joins A's run of it.
    await new Promise<void>((resolve) => setImmediate(resolve))
    clock.advance(120)

    await expect(a).rejects.toSatisfy(isDeadlineExceeded)
    const result = await b
    expect(result.response.text).toBe('done: {"id":"m2"}')
    expect(sent).toBe(1)
    runB.dispose()
  })
})
