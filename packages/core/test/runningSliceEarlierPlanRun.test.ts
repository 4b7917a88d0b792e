import { Deadline, ManualClock, runningSlice } from '@hourglass/core'
import { expect, it } from 'vitest'

// Only the last plan made on a deadline is kept. A step `run` started in an
// earlier plan on the same deadline (a server's own plan, the route making
// one of its own on the request's deadline meanwhile) is still pending —
// `run` ends its slice — but once the later plan had nothing running, the
// earlier one was never read: a server's 504 named no slice at all.
it("names a slice run() started in an earlier plan on the deadline once the later plan's are over", async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const ingress = request.plan({ work: 1 }, { reserveMs: 0 })
  let planned = (): void => {}
  const routePlanDone = new Promise<void>((resolve) => {
    planned = resolve
  })
  const work = ingress
    .run('work', async () => {
      const own = request.plan({ lookup: 1 }, { reserveMs: 0 })
      await own.run('lookup', async () => 'found')
      planned()
      await new Promise(() => {})
    })
    .catch((error: unknown) => error)
  await routePlanDone
  expect(runningSlice(request)).toBe('work')
  clock.advance(1000)
  expect(await work).toMatchObject({ slice: 'work' })
  expect(runningSlice(request)).toBeUndefined()
})

it('the same when the earlier plan started its step after the later plan was made', async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const ingress = request.plan({ work: 1 }, { reserveMs: 0 })
  request.plan({ lookup: 1 }, { reserveMs: 0 }).slice('lookup').dispose()
  const work = ingress.run('work', () => new Promise(() => {})).catch(() => {})
  expect(runningSlice(request)).toBe('work')
  request.cancel()
  await work
  expect(runningSlice(request)).toBeUndefined()
})

it("names the later plan's running step first, and the earlier one's after it ended", async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const ingress = request.plan({ work: 1 }, { reserveMs: 0 })
  const own = request.plan({ lookup: 1 }, { reserveMs: 0 })
  const work = ingress.run('work', () => new Promise(() => {})).catch(() => {})
  const lookup = own.slice('lookup')
  expect(runningSlice(request)).toBe('lookup')
  lookup.dispose()
  expect(runningSlice(request)).toBe('work')
  request.cancel()
  await work
})

it('two steps run() started in plans on one deadline: the one still pending is named', async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const first = request.plan({ a: 1 }, { reserveMs: 0 })
  const second = request.plan({ b: 1 }, { reserveMs: 0 })
  const third = request.plan({ c: 1 }, { reserveMs: 0 })
  let finishB = (): void => {}
  const a = first.run('a', () => new Promise(() => {})).catch(() => {})
  const b = second.run('b', () => new Promise<void>((resolve) => (finishB = resolve)))
  await Promise.resolve()
  await Promise.resolve()
  expect(runningSlice(request)).toBe('b')
  finishB()
  await b
  expect(runningSlice(request)).toBe('a')
  third.slice('c').dispose()
  expect(runningSlice(request)).toBe('a')
  request.cancel()
  await a
  expect(runningSlice(request)).toBeUndefined()
})

it("a slice() the later plan started and left behind is not named over the earlier plan's step started after it", async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const ingress = request.plan({ work: 1 }, { reserveMs: 0 })
  try {
    request.plan({ fetch: 1 }, { reserveMs: 0 }).slice('fetch') // never ended
    throw new Error('upstream refused')
  } catch {}
  expect(runningSlice(request)).toBe('fetch')
  const work = ingress.run('work', () => new Promise(() => {})).catch(() => {})
  expect(runningSlice(request)).toBe('work')
  request.cancel()
  await work
  expect(runningSlice(request)).toBeUndefined()
})

it('the older of two pending steps ending first leaves the newer named, then none', async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const first = request.plan({ a: 1 }, { reserveMs: 0 })
  const second = request.plan({ b: 1 }, { reserveMs: 0 })
  let finishA = (): void => {}
  const a = first.run('a', () => new Promise<void>((resolve) => (finishA = resolve)))
  const b = second.run('b', () => new Promise(() => {})).catch(() => {})
  await Promise.resolve()
  await Promise.resolve()
  finishA()
  await a
  expect(runningSlice(request)).toBe('b')
  expect(first.report()[0]?.outcome).toBe('ok')
  request.cancel()
  await b
  expect(runningSlice(request)).toBeUndefined()
})

// Both an earlier plan's pending step and a step of a plan under the
// deadline running: the later one is where the time ran out (a budget on
// trial made inside `work`). The pending step was read first and the 504
// named `work`, hiding `step`.
it('names a step running in a plan under the deadline over an earlier pending step it started inside', async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const ingress = request.plan({ work: 1 }, { reserveMs: 0 })
  let stepping = (): void => {}
  const stepStarted = new Promise<void>((resolve) => {
    stepping = resolve
  })
  const work = ingress
    .run('work', async () => {
      await request.plan({ lookup: 1 }, { reserveMs: 0 }).run('lookup', async () => 1)
      const trial = request.child(100, { observe: true }).plan({ step: 1 }, { reserveMs: 0 })
      const step = trial.run('step', () => new Promise(() => {})).catch(() => {})
      stepping()
      await step
    })
    .catch(() => {})
  await stepStarted
  expect(runningSlice(request)).toBe('step')
  request.cancel()
  await work
})
