import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const sse = (chunk: object) => `data: ${JSON.stringify(chunk)}\n\n`
const filters = {
  hate: { filtered: false, severity: 'safe' },
  self_harm: { filtered: false, severity: 'safe' },
  sexual: { filtered: false, severity: 'safe' },
  violence: { filtered: false, severity: 'safe' },
}
const answerChunk = (delta: object, finish: string | null) => ({
  choices: [
    { content_filter_results: filters, delta, finish_reason: finish, index: 0, logprobs: null },
  ],
  created: 1,
  id: 'chatcmpl-1',
  model: 'gpt-4o-2024-11-20',
  object: 'chat.completion.chunk',
  system_fingerprint: 'fp_1',
})

/**
 * Azure OpenAI's stream as documented: a first chunk with no choices, only
 * the prompt's filter results, whose id and model are `""`; then the
 * answer's chunks; a content-filter chunk with `""` again; the usage.
 */
const azureStream =
  sse({
    choices: [],
    created: 0,
    id: '',
    model: '',
    object: '',
    prompt_filter_results: [{ prompt_index: 0, content_filter_results: filters }],
  }) +
  sse(answerChunk({ content: '', role: 'assistant', refusal: null }, null)) +
  sse(answerChunk({ content: 'Hello' }, null)) +
  sse(answerChunk({ content: ' world' }, null)) +
  sse(answerChunk({}, 'stop')) +
  sse({
    choices: [
      {
        content_filter_offsets: { check_offset: 0, start_offset: 0, end_offset: 11 },
        content_filter_results: filters,
        finish_reason: null,
        index: 0,
      },
    ],
    created: 0,
    id: '',
    model: '',
    object: '',
  }) +
  sse({
    ...answerChunk({}, null),
    choices: [],
    usage: { completion_tokens: 2, prompt_tokens: 9, total_tokens: 11 },
  }) +
  'data: [DONE]\n\n'

describe("an Azure OpenAI stream, whose first chunk's id is empty", () => {
  it("keeps the answer's id (the first id said, not the empty one) on the answer and its record", async () => {
    const server = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: azureStream,
    })
    servers.push(server)
    const model = fakes.adapter(
      openAICompatible({
        baseURL: `${server.url}/openai/deployments/gpt-4o`,
        apiKey: 'sk',
        model: 'gpt-4o',
      }),
    )
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 20, stream: true },
      limits: { admission: false },
      onAttempt: (record) => records.push(record),
    })
    const answer = await stream.result
    expect(answer.text).toBe('Hello world')
    expect(answer.id).toBe('chatcmpl-1')
    expect(records.at(-1)?.responseId).toBe('chatcmpl-1')
  })
})
