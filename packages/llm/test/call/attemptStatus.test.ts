import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { rawServer } from '../adapters/support/rawServer.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

// The attempt record's `status` is the HTTP status the attempt got: it was
// missing for a stream broken after its first token, and a 204 said 200.

const fakes = useFakes()
const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

async function answering(status: number, headers: Record<string, string>, body: string) {
  const server = await rawServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(status, headers)
      res.end(body)
    })
  })
  servers.push(server)
  return fakes.adapter(
    openAICompatible({ baseURL: server.baseURL, apiKey: 'sk-test-key-123', model: 'm' }),
  )
}

describe('the status in attempt records', () => {
  it('a stream broken after its first token: the 200 it got', async () => {
    const model = await answering(
      200,
      { 'content-type': 'text/event-stream' },
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Hel' } }] })}\n\n`,
    )
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 10, stream: true },
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    })
    await expect(stream.result).rejects.toMatchObject({ code: 'STREAM_INTERRUPTED' })
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ decision: 'fail', status: 200 })
  })

  it('a 204 with no answer in it: 204, not 200', async () => {
    const model = await answering(204, {}, '')
    const records: AttemptRecord[] = []
    await expect(
      callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 10 },
        limits: { admission: false },
        retry: { maxAttempts: 1, budgets: false, delay: FAST_RETRIES },
        onAttempt: (r) => records.push(r),
      }),
    ).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(records.map((r) => r.status)).toEqual([204])
  })
})
