import { Deadline, guard, untilEnded, wait, writeDeadline } from '@hourglass/core'
import { expect, it } from 'vitest'

// A number of ms (or a Date, or an AbortController) passed where a Deadline
// or an AbortSignal belongs failed far from the call with "deadline.onDone
// is not a function" or "Cannot read properties of undefined (reading
// 'aborted')" — and guard threw that synchronously out of a function whose
// callers handle only its rejection. Refused where given, naming the option,
// as Deadline.after refuses a parent or a signal of the wrong shape.

it('wait, untilEnded and guard reject a deadline or a signal of the wrong shape with a TypeError naming it', async () => {
  await expect(wait(5, { deadline: 500 as never })).rejects.toThrow(
    new TypeError('wait: deadline must be a Deadline, got 500'),
  )
  await expect(wait(5, { signal: new AbortController() as never })).rejects.toThrow(
    /^wait: signal must be an AbortSignal, got /,
  )
  await expect(untilEnded(Promise.resolve(1), { deadline: {} as never })).rejects.toThrow(
    new TypeError('untilEnded: deadline must be a Deadline, got an object'),
  )
  await expect(untilEnded(1, { signal: 'soon' as never })).rejects.toThrow(
    /^untilEnded: signal must be an AbortSignal, got 'soon'/,
  )
  let guarded: Promise<unknown> | undefined
  expect(() => {
    guarded = guard(async () => 1, { deadline: 500 as never })
  }).not.toThrow()
  await expect(guarded).rejects.toThrow(
    new TypeError('guard: deadline must be a Deadline, got 500'),
  )
})

it('writeDeadline refuses a deadline of the wrong shape with a TypeError naming it', () => {
  expect(() => writeDeadline({}, 500 as never)).toThrow(
    new TypeError('writeDeadline: deadline must be a Deadline, got 500'),
  )
  // Absent is still "no deadline": nothing written.
  expect(writeDeadline({}, undefined)).toBeUndefined()
})

it('false is none, as it always was (`{ deadline: useIt && req.deadline }` from JavaScript)', async () => {
  expect(writeDeadline({}, false as never)).toBeUndefined()
  // Typed so too: no cast where a `false | Deadline` is given.
  const useIt = false as boolean
  const no = useIt && Deadline.after(0)
  await expect(guard(Promise.resolve(1), { deadline: no })).resolves.toBe(1)
  await expect(wait(1, { deadline: no })).resolves.toBe('timer')
  await expect(untilEnded(Promise.resolve(2), { deadline: no })).resolves.toBe(2)
})

it('Deadline.after refuses an observe that is not true or false (`observe: "false"` turned dark mode on)', () => {
  expect(() => Deadline.after(10, { observe: 'false' as never })).toThrow(
    new TypeError("Deadline: observe must be true or false, got 'false' (a string)"),
  )
  expect(() => Deadline.after(10, { observe: 1 as never })).toThrow(
    new RangeError('Deadline: observe must be true or false, got 1'),
  )
  expect(() => Deadline.never({ observe: 'true' as never })).toThrow(TypeError)
  // Left out (or null), it is the parent's, as before.
  const parent = Deadline.after(1000, { observe: true })
  expect(Deadline.after(10, { parent, observe: null as never }).observe).toBe(true)
  expect(Deadline.after(10, { observe: false }).observe).toBe(false)
  parent.dispose()
})
