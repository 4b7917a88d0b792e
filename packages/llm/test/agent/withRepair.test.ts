import { ClientClosedError, Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { withRepair } from '../../src/agent/withRepair.js'
import { isRepairFailed, RepairFailedError } from '../../src/errors/RepairFailedError.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'

const answer = (text: string): ChatResponse => ({
  id: 'r',
  model: 'm',
  provider: 'p',
  content: [{ type: 'text', text }],
  text,
  finishReason: 'stop',
  usage: { inputTokens: 1, outputTokens: 1 },
})

const parseAge = (response: ChatResponse) => {
  const value = JSON.parse(response.text) as { age?: unknown }
  if (typeof value.age !== 'number') throw new Error('age must be a number')
  return value.age
}

const history: ChatMessage[] = [{ role: 'user', content: 'How old is Ada? JSON {"age": n}' }]

describe('withRepair', () => {
  it('turns a validation failure into a follow-up turn carrying the previous answer and the error', async () => {
    const seen: ChatMessage[][] = []
    const answers = ['{"age":"thirty-six"}', '{"age":36}']
    const result = await withRepair(
      async (messages) => {
        seen.push(messages)
        return answer(answers[seen.length - 1]!)
      },
      parseAge,
      { messages: history },
    )
    expect(result.value).toBe(36)
    expect(result.repairs).toBe(1)
    expect(seen[0]).toEqual(history)
    // Not a resend: the second call carries the first answer and the error.
    expect(seen[1]).toHaveLength(3)
    expect(seen[1]![1]).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: '{"age":"thirty-six"}' }],
    })
    expect(seen[1]![2]!.role).toBe('user')
    expect(seen[1]![2]!.content).toMatch(/failed validation:\nage must be a number/)
    expect(result.messages.at(-1)).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: '{"age":36}' }],
    })
    expect(history).toHaveLength(1)
  })

  it('cuts a long validation error before an emoji, never through it (a lone surrogate fails the next request)', async () => {
    const loneHalf = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
    const prompts: string[] = []
    // Each length puts the 2,000-character cut at another point of the emoji run: one splits a pair.
    for (const length of [1985, 1990, 1991, 1992, 1995, 2000]) {
      const seen: ChatMessage[][] = []
      await withRepair(
        async (messages) => {
          seen.push(messages)
          return answer(seen.length === 1 ? 'bad' : 'good')
        },
        (response) => {
          if (response.text === 'bad') throw new Error(`${'x'.repeat(length)}${'😀'.repeat(20)}`)
          return response.text
        },
        { messages: history },
      )
      prompts.push(seen[1]!.at(-1)!.content as string)
    }
    for (const prompt of prompts) {
      expect(prompt).toContain('…')
      expect(loneHalf.test(prompt), prompt.slice(1990, 2060)).toBe(false)
    }
  })

  it('throws RepairFailedError with every validation error after maxRepairs repair turns', async () => {
    let calls = 0
    const failing = withRepair(
      async () => {
        calls++
        return answer('not json')
      },
      parseAge,
      { messages: history, maxRepairs: 2 },
    )
    const error = await failing.catch((e: unknown) => e)
    expect(calls).toBe(3)
    expect(isRepairFailed(error)).toBe(true)
    expect(error).toBeInstanceOf(RepairFailedError)
    const failed = error as RepairFailedError
    expect(failed.code).toBe('REPAIR_FAILED')
    expect(failed.errors).toHaveLength(3)
    expect(failed.errors.every((e) => e instanceof SyntaxError)).toBe(true)
    expect(failed.repairs).toBe(2)
    expect(failed.lastResponse.text).toBe('not json')
    expect(failed.cause).toBe(failed.errors[2])
  })

  it('with maxRepairs 0 validates once and sends no repair turn', async () => {
    let calls = 0
    await expect(
      withRepair(async () => answer(`${calls++}`), parseAge, { messages: history, maxRepairs: 0 }),
    ).rejects.toMatchObject({ code: 'REPAIR_FAILED', repairs: 0 })
    expect(calls).toBe(1)
  })

  it('refuses an option name it does not read (maxRepair: 0, meant as no repair) before calling the model', async () => {
    let calls = 0
    const error = await withRepair(async () => answer(`${calls++}`), parseAge, {
      messages: history,
      maxRepair: 0,
    } as never).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect(String(error)).toMatch(/unknown option "maxRepair" \(did you mean maxRepairs\?\)/)
    expect(calls).toBe(0)
  })

  it('refuses a NaN maxRepairs before calling the model: it would never stop paying for repair turns', async () => {
    let calls = 0
    const call = async () => {
      // Bounded here so that the unfixed loop ends: it would otherwise call without end.
      if (++calls > 20) throw new Error('called without end')
      return answer('not JSON')
    }
    const error = await withRepair(call, parseAge, {
      messages: history,
      maxRepairs: Number.NaN,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RangeError)
    expect(String(error)).toMatch(/maxRepairs/)
    expect(calls).toBe(0)
  })

  // Only NaN was refused: Infinity (or 1e9) paid for repair turns without
  // end, a negative or fractional count was quietly read as another.
  it('refuses a maxRepairs that is not a whole number from 0 to 10, before calling the model', async () => {
    let calls = 0
    const call = async () => {
      if (++calls > 20) throw new Error('called without end')
      return answer('not JSON')
    }
    for (const maxRepairs of [Number.POSITIVE_INFINITY, 1e9, 11, -1, 1.5]) {
      const error = await withRepair(call, parseAge, { messages: history, maxRepairs }).catch(
        (e: unknown) => e,
      )
      expect(error, String(maxRepairs)).toBeInstanceOf(RangeError)
      expect(String(error)).toMatch(/withRepair: maxRepairs must be a whole number from 0 to 10/)
    }
    expect(calls).toBe(0)
    await expect(withRepair(call, parseAge, { messages: history, maxRepairs: 10 })).rejects.toThrow(
      /repair/i,
    )
    expect(calls).toBe(11)
  })

  it('lets the caller word the repair turn and accepts async validators', async () => {
    const seen: ChatMessage[][] = []
    await withRepair(
      async (messages, { repair }) => {
        seen.push(messages)
        return answer(repair === 0 ? '{}' : '{"age":1}')
      },
      async (r) => parseAge(r),
      { messages: history, repairPrompt: (e, n) => `fix #${n}: ${(e as Error).message}` },
    )
    expect(seen[1]![2]).toEqual({ role: 'user', content: 'fix #1: age must be a number' })
  })

  it('rethrows a deadline that ran out while validating, not RepairFailedError (a 504, not a 500), and sends no repair turn', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    let calls = 0
    const error = await withRepair(
      async () => {
        calls++
        return answer('{"age":36}')
      },
      async (response) => {
        // An async validator whose lookup outlived the request's budget.
        clock.advance(100)
        deadline.throwIfExpired()
        return parseAge(response)
      },
      { messages: history, maxRepairs: 0 },
    ).catch((e: unknown) => e)
    expect(isRepairFailed(error)).toBe(false)
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(error).toBe(deadline.reason)
    expect(calls).toBe(1)
  })

  it('rethrows a cancel (ClientClosedError, an AbortError, one as the cause) thrown by validate before any repair turn', async () => {
    const reasons: unknown[] = [
      new ClientClosedError(),
      new DOMException('This operation was aborted', 'AbortError'),
      new Error('lookup failed', { cause: new ClientClosedError() }),
    ]
    for (const reason of reasons) {
      let calls = 0
      const error = await withRepair(
        async () => {
          calls++
          return answer('{"age":36}')
        },
        () => {
          throw reason
        },
        { messages: history, maxRepairs: 2 },
      ).catch((e: unknown) => e)
      expect(error).toBe(reason)
      expect(calls).toBe(1)
    }
  })
})
