import { Deadline } from '@hourglass/core'
import { createFetch } from '@hourglass/fetch'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { driveOne, WaitClock } from '../support/waitClock.js'

const fakes = useFakes()

// $1 per input token, $2 per output token: costs read as token counts.
const prices = {
  slow: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 },
  backup: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 },
}
const messages = [user('Write at length about the sea.')]
const maxTokens = 100
const PROMPT_USD = estimatePromptTokens({ messages })

// DESIGN.md: "A read timeout still costs a full generation" — which is why
// it is never resent to the same model. It is not charged, though: an upload
// the server stopped reading fails with the same HEADERS_TIMEOUT (the limit
// counts from the last piece written), and nothing tells the two apart, so
// charging the worst case would spend the budget on requests never received.
// The slow fake's 2 s and the client's 150 ms headers timeout are on one
// manual clock, moved only while the call waits: the timeout fires first
// however busy the machine is.
describe('a non-streamed attempt whose response headers time out', () => {
  it('is not resent to that model and is charged nothing; the fallback’s answer is', async () => {
    const clock = new WaitClock()
    const slowFake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('late answer', { firstTokenDelayMs: 2000 }),
      clock,
    })
    const backupFake = await fakes.start({ dialect: 'openai', reply: reply.text('backup answer') })
    const readLimited = createFetch({ headersTimeoutMs: 150, clock })
    const slow = fakes.adapter(
      openAICompatible({
        baseURL: slowFake.baseURL,
        apiKey: 'sk',
        model: 'slow',
        fetch: readLimited,
      }),
    )
    const backup = fakes.adapter(
      openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'sk', model: 'backup' }),
    )
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const answer = await driveOne(
      clock,
      callModel({
        models: [slow, backup],
        request: { messages, maxTokens },
        deadline: Deadline.never({ clock }),
        onAttempt: (r) => records.push(r),
        retry: { maxAttempts: 3, delay: FAST_RETRIES },
        limits: { budget, admission: false },
      }),
    )
    expect(answer.text).toBe('backup answer')
    expect(records[0]).toMatchObject({ model: 'slow', errorKind: 'timeout', status: 0 })
    expect(records[0]?.costUsd).toBe(0)
    expect(records[1]).toMatchObject({ model: 'backup', decision: 'success' })
    // A record's cost is the call's so far: the backup's answer alone.
    expect(budget.spentUsd).toBe(records[1]?.costUsd)
    expect(budget.spentUsd).toBeLessThan(PROMPT_USD + 2 * maxTokens)
    await readLimited.close()
  })
})
