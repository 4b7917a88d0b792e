import { describe, expect, it } from 'vitest'
import type { SideEffectRecord, SideEffectStore } from '../../src/agent/SideEffectStore.js'
import { sideEffect } from '../../src/agent/sideEffect.js'
import { isSideEffectStoreError } from '../../src/errors/SideEffectStoreError.js'

// A store over a Redis hash answers HGETALL's `{}` for a key it never saw.
// Read as a record, it was a completed run of `undefined`: `fn` never ran
// (the email never sent) and the caller was told it had, with `undefined`.
// Refused as a store that could not be read, as `null` is read as none.

describe('sideEffect: a store answer that is no record', () => {
  it('{} (HGETALL of a missing key): SideEffectStoreError, fn not run', async () => {
    let ran = 0
    const store: SideEffectStore = {
      get: () => ({}) as SideEffectRecord,
      set: () => {},
    }
    const error = await sideEffect('k', () => ++ran, { store, deadline: false }).catch(
      (e: unknown) => e,
    )
    expect(isSideEffectStoreError(error)).toBe(true)
    expect(ran).toBe(0)
  })

  it('a record of an undefined result, as JSON writes it ({ completedAtMs }): read as that result', async () => {
    let ran = 0
    const store: SideEffectStore = {
      get: () => ({ completedAtMs: 1 }) as SideEffectRecord,
      set: () => {},
    }
    await expect(sideEffect('k2', () => ++ran, { store, deadline: false })).resolves.toBeUndefined()
    expect(ran).toBe(0)
  })
})
