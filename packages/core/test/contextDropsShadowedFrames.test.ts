import {
  contextKey,
  currentDeadline,
  currentRequestId,
  Deadline,
  readContext,
  runWithContext,
  runWithDeadline,
  runWithRequestId,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { collectGarbage } from './support/collectGarbage.js'

// Every frame kept the frame it ran in, shadowed or not: a worker that starts
// each job from inside the previous job's context (a setImmediate, an
// emitter) kept every earlier job's deadline reachable (19,999 of 20,000 in
// the audit's repro) and each slot lookup walked all of them.
describe('a context frame for a key does not keep the frame it shadows', () => {
  it('a chain of jobs, each started inside the last, keeps no earlier job’s deadline', async () => {
    const jobs = 30
    const earlier: WeakRef<Deadline>[] = []
    let current: Deadline | undefined
    const seen = await runWithRequestId('worker', () => {
      return new Promise<{ reachable: number; requestId: string | undefined }>((done) => {
        const next = (i: number) => {
          if (i === jobs) {
            // Inside the last job's context (its frame is the store here);
            // every WeakRef was made in an earlier job, which has ended.
            collectGarbage()
            return done({
              reachable: earlier.filter((ref) => ref.deref() !== undefined).length,
              requestId: currentRequestId(),
            })
          }
          const deadline = Deadline.never()
          if (current) earlier.push(new WeakRef(current))
          current = deadline
          runWithDeadline(deadline, () => setImmediate(() => next(i + 1)))
        }
        next(0)
      })
    })
    expect(earlier).toHaveLength(jobs - 1)
    expect(seen).toEqual({ reachable: 0, requestId: 'worker' }) // the slot below them is kept
  })

  it('shadowing keeps every other slot, above and below, and the outer value outside', () => {
    const attempt = contextKey<string>('attempt')
    const outer = Deadline.never()
    const inner = Deadline.never()
    runWithRequestId('r1', () =>
      runWithDeadline(outer, () =>
        runWithContext(attempt, 'a1', () => {
          // The deadline's frame is below the attempt's: the attempt's is copied.
          runWithDeadline(inner, () => {
            expect(currentDeadline()).toBe(inner)
            expect(readContext(attempt)).toBe('a1')
            expect(currentRequestId()).toBe('r1')
            runWithRequestId('r2', () => {
              expect(currentRequestId()).toBe('r2')
              expect(currentDeadline()).toBe(inner)
              expect(readContext(attempt)).toBe('a1')
            })
          })
          expect(currentDeadline()).toBe(outer)
          expect(readContext(attempt)).toBe('a1')
        }),
      ),
    )
    expect(currentDeadline()).toBeUndefined()
  })
})
