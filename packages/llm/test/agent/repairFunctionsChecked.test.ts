import { describe, expect, it } from 'vitest'
import { type RepairableCall, type Validate, withRepair } from '../../src/agent/withRepair.js'
import type { ChatResponse } from '../../src/types.js'

// A schema object passed for `validate` (`withRepair(call, schema, …)`, not
// `(r) => schema.parse(…)`) failed "validation" on every answer: three paid
// model calls, the model told "validate is not a function" twice, then
// RepairFailedError. A string `repairPrompt` failed after the first paid
// call as "prompt is not a function". Refused before any call, as runTurns
// refuses a `call` or a tool that is no function.

const answer = (text: string): ChatResponse => ({
  id: 'r',
  model: 'm',
  provider: 'p',
  content: [{ type: 'text', text }],
  text,
  finishReason: 'stop',
  usage: { inputTokens: 1, outputTokens: 1 },
})

describe('withRepair: call, validate and repairPrompt must be functions', () => {
  const messages = [{ role: 'user' as const, content: 'JSON please' }]

  it('a validate that is no function (a schema object): TypeError naming it, no model call', async () => {
    let calls = 0
    const call: RepairableCall = async () => {
      calls++
      return answer('{"a":1}')
    }
    const schema = { parse: (r: ChatResponse) => JSON.parse(r.text) as unknown }
    const error = await withRepair(call, schema as unknown as Validate<unknown>, {
      messages,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(/withRepair: validate must be a function/)
    expect(calls).toBe(0)
  })

  it('a repairPrompt that is no function (the prompt text): TypeError naming it, no model call', async () => {
    let calls = 0
    const call: RepairableCall = async () => {
      calls++
      return answer('not json')
    }
    const error = await withRepair(call, (r) => JSON.parse(r.text) as unknown, {
      messages,
      repairPrompt: 'Reply with valid JSON only.' as unknown as () => string,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(/withRepair: repairPrompt must be a function/)
    expect(calls).toBe(0)
  })

  it('a call that is no function: TypeError naming it', async () => {
    const error = await withRepair('gpt-4o' as unknown as RepairableCall, (r) => r, {
      messages,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(/withRepair: call must be a function/)
  })
})
