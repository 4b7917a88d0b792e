import { describe, expect, it } from 'vitest'
import { GatewayRequestError } from '../src/http/GatewayRequestError.js'
import { parseChatRequest } from '../src/http/parseChatRequest.js'

// An unknown field is named in the 400's `param` and `message`. A name with
// other characters was quoted and cut at 64; a plain one (letters, digits,
// `_`, `$`) was echoed whole: 5,000 × 'k' inside a message came back twice,
// a 10 KB answer to a 5 KB mistake. Cut the same way.

function refusal(body: unknown): GatewayRequestError {
  try {
    parseChatRequest(body, { defaultMaxTokens: 100 })
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayRequestError)
    return error as GatewayRequestError
  }
  throw new Error('expected the body to be refused')
}

const message = (extra: Record<string, unknown>) => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hi', ...extra }],
})

describe('an unknown field with a long plain name', () => {
  it('is cut at 64 characters, as a name with other characters is', () => {
    const error = refusal(message({ ['k'.repeat(5000)]: 1 }))
    const shown = `"${'k'.repeat(64)}…"`
    expect(error.param).toBe(`messages[0][${shown}]`)
    expect(error.message).toBe(`messages[0][${shown}]: unknown field`)
    // The other kind, for comparison: cut as before.
    const other = refusal(message({ [`-${'k'.repeat(5000)}`]: 1 }))
    expect(other.param).toBe(`messages[0]["-${'k'.repeat(63)}…"]`)
  })

  it('a plain name of up to 64 characters reads as before, a dotted path', () => {
    expect(refusal(message({ ['k'.repeat(64)]: 1 })).param).toBe(`messages[0].${'k'.repeat(64)}`)
    expect(refusal(message({ nme: 1 })).message).toBe('messages[0].nme: unknown field')
  })
})
