import { Deadline, ManualClock, runningSlice } from '@hourglass/core'
import { expect, it } from 'vitest'

// A slice started and never ended (its step failed and the error was
// swallowed: no `dispose`, no `end`) stays `running` in its plan's report
// for good. The code then moved on to another plan, made outside that
// slice; runningSlice still named the forgotten slice, ahead of the one
// actually running, or when none was: a server's 504 blamed a step that
// had been over for most of the request.
it('names the slice running now, not one of an earlier plan left unended', async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const earlier = request.plan({ fetch: 1, rest: 1 }, { reserveMs: 0 })
  earlier.slice('fetch') // never ended
  expect(runningSlice(request)).toBe('fetch')
  const later = request.child().plan({ model: { ms: 100 } }, { reserveMs: 0 })
  const run = later.run('model', () => new Promise(() => {})).catch((error: unknown) => error)
  expect(runningSlice(request)).toBe('model')
  clock.advance(100)
  expect(await run).toMatchObject({ slice: 'model' })
  // Nothing runs now: the forgotten slice is not named either.
  expect(runningSlice(request)).toBeUndefined()
})

it('the same for an earlier plan made under the deadline and a later one made on it', () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  request.child().plan({ fetch: 1 }, { reserveMs: 0 }).slice('fetch') // never ended
  const later = request.plan({ model: 1, write: 1 }, { reserveMs: 0 })
  expect(runningSlice(request)).toBeUndefined()
  later.slice('model')
  expect(runningSlice(request)).toBe('model')
})

it('still names a slice a later plan was made inside (its own plan, nested)', () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const outer = request.plan({ model: 1 }, { reserveMs: 0 })
  const model = outer.slice('model')
  const inner = model.child(500).plan({ retry: 1 }, { reserveMs: 0 })
  inner.slice('retry').dispose()
  expect(runningSlice(request)).toBe('model')
  // A slice started after the later plan was made is no forgotten one.
  const other = Deadline.after(1000, { clock })
  const trial = other.child(100, { observe: true }).plan({ parse: 1 }, { reserveMs: 0 })
  const own = other.plan({ fetch: 1 }, { reserveMs: 0 })
  trial.slice('parse')
  expect(runningSlice(other)).toBe('parse')
  own.slice('fetch')
  expect(runningSlice(other)).toBe('fetch')
})

it('still names a slice run() started: its step is pending, whatever plan it made meanwhile', async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const plan = request.plan({ model: 1 }, { reserveMs: 0 })
  let parsed = (): void => {}
  const trialDone = new Promise<void>((resolve) => {
    parsed = resolve
  })
  const step = plan
    .run('model', async () => {
      // A budget on trial for part of the step, made on the request's deadline.
      await request
        .child(100, { observe: true })
        .plan({ parse: 1 }, { reserveMs: 0 })
        .run('parse', async () => 'parsed')
      parsed()
      await new Promise(() => {})
    })
    .catch(() => {})
  await trialDone
  expect(runningSlice(request)).toBe('model')
  request.cancel()
  await step
})
