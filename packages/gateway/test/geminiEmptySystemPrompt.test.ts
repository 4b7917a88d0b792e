import type { RecordedRequest } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

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

let harness: Harness
let close: () => Promise<void>
let requests: () => readonly RecordedRequest[]

beforeAll(async () => {
  const { fake, entry } = await fakeProvider('gemini', ['k'])
  fake.setReply(geminiCheck)
  requests = () => fake.requests
  harness = await startHarness({
    providers: { gem: entry },
    models: { m: fallback(['gem', 'gemini-2.5-flash']) },
  })
  close = async () => {
    await harness.close()
    await fake.close()
  }
})

afterAll(async () => {
  await close()
})

describe('an empty system prompt, for a model routed to Gemini', () => {
  it('is answered: no empty systemInstruction is sent', async () => {
    const answer = await harness.client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'system', content: '' },
        { role: 'user', content: 'Say hello in French.' },
      ],
    })
    expect(answer.choices[0]?.message.content).toBe('Bonjour')
    const body = requests().at(-1)?.body as Record<string, unknown> | undefined
    expect(body).toBeDefined()
    expect(body?.['systemInstruction']).toBeUndefined()
  })
})
