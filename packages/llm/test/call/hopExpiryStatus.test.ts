import { Deadline, isDeadlineExceeded } from '@hourglass/core'
import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'

const closing: Array<() => Promise<void>> = []
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()))
})

// An Hourglass hop (the gateway, an Express app with deadline()) answers 504
// with x-deadline-expired: 1 when the budget this attempt sent it ran out:
// the call's deadline, told early. The attempt had an HTTP answer, which its
// egress span showed; its record (and so its chat span) had no status.
describe("the next hop's 504 with x-deadline-expired: 1", () => {
  it("is on the attempt's record as the status it got (its egress span says 504 too)", async () => {
    const hop = await faultServer({
      type: 'respond',
      status: 504,
      headers: {
        'content-type': 'application/json',
        'x-deadline-expired': '1',
        'x-should-retry': 'false',
      },
      body: '{"error":{"message":"deadline exceeded","type":"server_error","code":"deadline_exceeded"}}',
    })
    closing.push(() => hop.close())
    const model = openAICompatible({ baseURL: `${hop.url}/v1`, apiKey: 'k', model: 'm' })
    const records: AttemptRecord[] = []
    const deadline = Deadline.after(5000, { name: 'model' })
    try {
      const error = await callModel({
        models: [model],
        request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 20 },
        deadline,
        onAttempt: (record) => records.push(record),
      }).catch((e: unknown) => e)
      expect(isDeadlineExceeded(error)).toBe(true)
      expect(records).toHaveLength(1)
      expect(records[0]).toMatchObject({ errorKind: 'deadline_exceeded', status: 504 })
      // Not billed: a 504 is no answer.
      expect(records[0]?.costUsd ?? 0).toBe(0)
    } finally {
      deadline.dispose()
    }
  })
})
