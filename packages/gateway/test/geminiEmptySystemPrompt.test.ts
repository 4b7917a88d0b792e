import type { FakeProvider, RecordedRequest } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * A chat UI whose system-prompt setting is left empty sends `{ role:
 * "system", content: "" }`, which OpenAI takes. Gemini answers an empty text
 * part — in `contents` or in `systemInstruction` — 400 "Unable to submit
 * request because it has an empty text parameter", as the fake does here.
 */

function geminiCheck(request: RecordedRequest) {
  const body = request.body as {
    systemInstruction?: { parts: Array<{ text?: string }> }
    contents: Array<{ parts: Array<{ text?: string }> }>
  }
  const parts = [...(body.systemInstruction?.parts ?? []), ...body.contents.flatMap((c) => c.parts)]
  if (parts.some((part) => part.text === '')) {
    return {
      kind: 'error' as const,
      status: 400,
      body: {
        error: {
          code: 400,
          status: 'INVALID_ARGUMENT',
          message:
            'Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again.',
        },
      },
    }
  }
  return { kind: 'text' as const, text: 'Bonjour' }
}

const gateway = oneProviderGateway()
let fake: FakeProvider

beforeAll(async () => {
  fake = await gateway.one('gemini')
  fake.setReply(geminiCheck)
})

afterAll(() => gateway.close())

describe('an empty system prompt, for a model routed to Gemini', () => {
  it('is answered: no empty systemInstruction is sent', async () => {
    const answer = await gateway.harness.client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'system', content: '' },
        { role: 'user', content: 'Say hello in French.' },
      ],
    })
    expect(answer.choices[0]?.message.content).toBe('Bonjour')
    const body = fake.requests.at(-1)?.body as Record<string, unknown> | undefined
    expect(body).toBeDefined()
    expect(body?.['systemInstruction']).toBeUndefined()
  })
})
