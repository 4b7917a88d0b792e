import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import type { ChatMessage } from '../../src/types.js'

const build = (messages: ChatMessage[]) =>
  dialects.gemini.buildRequest({ maxTokens: 10, messages }, 'gemini-2.5-flash').body

describe('blank system text for Gemini (it answers 400 to an empty text part)', () => {
  it('an empty system prompt sends no systemInstruction', () => {
    const body = build([
      { role: 'system', content: '' },
      { role: 'user', content: 'hi' },
    ])
    expect(body['systemInstruction']).toBeUndefined()
    expect(body['contents']).toEqual([{ role: 'user', parts: [{ text: 'hi' }] }])
  })

  it('blank system messages beside others leave no empty lines in the instruction', () => {
    const body = build([
      { role: 'system', content: ' \n' },
      { role: 'system', content: 'Answer in French.' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: '' },
      { role: 'system', content: 'Be brief.' },
    ])
    expect(body['systemInstruction']).toEqual({
      parts: [{ text: 'Answer in French.\n\nBe brief.' }],
    })
  })
})
