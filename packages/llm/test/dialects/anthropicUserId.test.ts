import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'

/**
 * `user` and `safety_identifier` go to Anthropic as `metadata.user_id`, which
 * takes at most 256 characters and answers an email address 400
 * ("metadata.user_id: user_id appears to contain an email address. Please
 * send a uuid or hash value", BerriAI/litellm #10106) — ids OpenAI takes. A
 * 400 never goes to a fallback: refused before anything is sent, naming the
 * field the client set.
 */

function build(extra: Record<string, unknown>) {
  return dialects.anthropic.buildRequest(
    { maxTokens: 10, messages: [{ role: 'user', content: 'hi' }], extra },
    'claude-sonnet-4-5',
  ).body
}

function refusal(extra: Record<string, unknown>): { field: string; message: string } | undefined {
  try {
    build(extra)
    return undefined
  } catch (error) {
    if (!isInvalidChatRequest(error)) throw error
    return { field: error.field, message: error.message }
  }
}

describe('Anthropic metadata.user_id', () => {
  it('takes an opaque id of up to 256 characters as it is', () => {
    const longest = 'u'.repeat(256)
    expect(build({ user: longest })['metadata']).toEqual({ user_id: longest })
    const hash = 'f'.repeat(64)
    expect(build({ safety_identifier: hash })['metadata']).toEqual({ user_id: hash })
    // An @ alone is no email address (a handle, a scoped id).
    expect(build({ user: '@alice' })['metadata']).toEqual({ user_id: '@alice' })
    expect(build({ user: 'org@1234' })['metadata']).toEqual({ user_id: 'org@1234' })
  })

  it('refuses a longer one, naming the field that set it', () => {
    expect(refusal({ user: 'u'.repeat(257) })).toMatchObject({ field: 'user' })
    expect(refusal({ safety_identifier: 's'.repeat(257) })?.message).toMatch(
      /^safety_identifier: Anthropic takes an end-user id of at most 256 characters, got 257/,
    )
    // Counted in characters, as Anthropic counts: 256 emoji are 512 UTF-16 units.
    expect(build({ user: '😀'.repeat(256) })['metadata']).toEqual({ user_id: '😀'.repeat(256) })
  })

  it('refuses an email address, saying to send a hash of it', () => {
    for (const id of ['alice@example.com', 'user:Bob.Smith+ai@mail.example.co.uk']) {
      const refused = refusal({ user: id })
      expect(refused?.field).toBe('user')
      expect(refused?.message).toContain('email address')
      expect(refused?.message).toContain('hash')
    }
    expect(refusal({ safety_identifier: 'alice@example.com' })?.field).toBe('safety_identifier')
    // The same value in both is one id: refused once, naming user.
    expect(
      refusal({ user: 'alice@example.com', safety_identifier: 'alice@example.com' })?.field,
    ).toBe('user')
  })
})
