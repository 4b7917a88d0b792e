import { expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import { sideEffect } from '../../src/agent/sideEffect.js'
import { withRepair } from '../../src/agent/withRepair.js'
import { callModel } from '../../src/call/callModel.js'
import { chatAnswer } from '../support/chatAnswer.js'
import { useFakes, user } from './support/fakes.js'

// The context runTurns and withRepair hand to `call` and to tools is passed
// on as the README says, `callModel({ …, ...ctx })`: callModel and
// sideEffect, which refuse an option name they do not read, take the names
// those contexts carry beside their options (`turn`, `lastTurn`, `repair`,
// `key`) and ignore them. Refused, every run passing its context on so
// failed before its first model call; a spread into anything else carries
// every field, as before.

const fakes = useFakes()

it('runTurns and withRepair: the context spread into callModel is taken; turn, lastTurn and repair still read', async () => {
  const fake = await fakes.start({ dialect: 'openai' })
  const model = fakes.adapterFor('openai', fake.baseURL, 'fake-model')
  const seen: unknown[] = []
  const run = await runTurns({
    operationId: 'spread-call',
    messages: [user('hi')],
    tools: {},
    store: new MemorySideEffectStore(),
    call: (messages, context) => {
      seen.push([context.turn, context.lastTurn, { ...context }.lastTurn])
      return callModel({ models: [model], request: { messages, maxTokens: 20 }, ...context })
    },
  })
  expect(run.turns).toBe(1)
  expect(seen).toEqual([[1, false, false]])
  const repaired = await withRepair(
    (messages, context) => {
      seen.push(context.repair)
      return callModel({ models: [model], request: { messages, maxTokens: 20 }, ...context })
    },
    (response) => response.text,
    { messages: [user('hi')] },
  )
  expect(repaired.repairs).toBe(0)
  expect(seen.at(-1)).toBe(0)
})

it('a tool: its context spread into sideEffect is taken; key and turn still read', async () => {
  let turn = 0
  const read: unknown[] = []
  const run = await runTurns({
    operationId: 'spread-tool',
    messages: [user('hi')],
    store: new MemorySideEffectStore(),
    call: async () =>
      ++turn === 1
        ? chatAnswer([{ type: 'tool_call', id: 'c1', name: 'lookup', arguments: {} }])
        : chatAnswer([{ type: 'text', text: 'done' }]),
    tools: {
      lookup: async (_args, context) => {
        read.push(typeof context.key, context.turn)
        return sideEffect('inner', async () => 'v', {
          store: new MemorySideEffectStore(),
          ...context,
        })
      },
    },
  })
  expect(run.response.text).toBe('done')
  expect(read).toEqual(['string', 1])
  const result = run.messages.find((m) => m.role === 'tool')
  expect(JSON.stringify(result)).toContain('v')
  expect(JSON.stringify(result)).not.toContain('unknown option')
})
