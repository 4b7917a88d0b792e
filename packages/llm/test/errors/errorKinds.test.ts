import { describe, expect, it } from 'vitest'
import { classify } from '../../src/admission/slot.js'
import {
  ERROR_KIND_TABLE,
  ERROR_KINDS,
  errorKindTraits,
  REQUEST_BOUND_KINDS,
  RETRYABLE_KINDS,
} from '../../src/errors/errorKinds.js'
import { decideRetry } from '../../src/retry/decideRetry.js'
import type { NormalizedError } from '../../src/types.js'

// A status that says nothing by itself (not 429/503/529), so only the kind decides.
const failure = (kind: (typeof ERROR_KINDS)[number]): NormalizedError => ({
  kind,
  retryable: ERROR_KIND_TABLE[kind].retryable,
  status: 400,
  message: kind,
})

describe('the one table of error kinds', () => {
  it('lists every kind once, transient kinds first, and derives the sets from it', () => {
    expect(ERROR_KINDS).toHaveLength(12)
    expect(new Set(ERROR_KINDS).size).toBe(ERROR_KINDS.length)
    expect([...RETRYABLE_KINDS]).toEqual(ERROR_KINDS.slice(0, 5))
    expect([...REQUEST_BOUND_KINDS].sort()).toEqual([
      'bad_request',
      'content_policy',
      'context_too_long',
    ])
    // A kind is never both transient and caused by the request.
    for (const kind of REQUEST_BOUND_KINDS) expect(RETRYABLE_KINDS.has(kind)).toBe(false)
    // Unknown strings (from a newer peer) are treated as unexplained server errors.
    expect(errorKindTraits('brand_new_kind')).toBe(ERROR_KIND_TABLE.server_error)
    expect(errorKindTraits('__proto__')).toBe(ERROR_KIND_TABLE.server_error)
  })

  it.each(ERROR_KINDS)('drives the retry decision for %s', (kind) => {
    const traits = ERROR_KIND_TABLE[kind]
    const decision = decideRetry({
      error: failure(kind),
      attempt: 1,
      maxAttempts: 3,
      hasFallback: true,
      random: () => 0,
    })
    const expected = traits.requestBound ? 'fail' : traits.retryable ? 'retry' : 'fallback'
    expect(decision.action).toBe(expected)
  })

  it.each(ERROR_KINDS)("drives admission's verdict for %s", (kind) => {
    const { limit } = ERROR_KIND_TABLE[kind]
    const verdict = classify({ ok: false, error: { kind, status: 400 } })
    const expected = limit === 'quota' ? 'retire' : limit
    expect(verdict).toBe(expected)
    // A quota with a reset time cools down instead of retiring the key.
    if (limit === 'quota') {
      expect(classify({ ok: false, error: { kind, status: 400, retryAfterMs: 1000 } })).toBe(
        'cooldown',
      )
    }
  })
})
