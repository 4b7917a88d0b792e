import { type Clock, Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

/**
 * A slice's timer is unref'd, as every deadline's: a script awaiting
 * `plan.run` on a step that holds no handle of its own (a promise on an
 * event that never comes) exited with code 13 before the slice could run
 * out, where `wait` and `guard` reject at the deadline. On a real clock an
 * enforcing slice now holds the process open (a ref'd system timer, counted
 * by `process.getActiveResourcesInfo()`) until `run` settles.
 */
const refdTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length

/** Real time as far as the plan can tell; its timers driven by hand. */
function realTimeManual(): { clock: Clock; manual: ManualClock } {
  const manual = new ManualClock()
  const clock: Clock = {
    realTime: true,
    now: () => manual.now(),
    setTimeout: (callback, ms) => manual.setTimeout(callback, ms),
    clearTimeout: (handle) => manual.clearTimeout(handle),
  }
  return { clock, manual }
}

it('holds the process open while a step is pending, and lets go when the slice runs out', async () => {
  const { clock, manual } = realTimeManual()
  const plan = Deadline.after(1000, { clock }).plan({ step: 1 }, { reserveMs: 0 })
  const before = refdTimers()
  const pending = plan.run('step', () => new Promise<never>(() => {}))
  expect(refdTimers()).toBe(before + 1)
  manual.advance(1000)
  await expect(pending).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'step' })
  expect(refdTimers()).toBe(before)
})

it('lets go when the step finishes first', async () => {
  const { clock } = realTimeManual()
  const deadline = Deadline.after(1000, { clock })
  const plan = deadline.plan({ step: 1 }, { reserveMs: 0 })
  const before = refdTimers()
  let pending: Promise<string> = Promise.resolve('')
  let finish: (value: string) => void = () => {}
  const started = new Promise<void>((startedStep) => {
    pending = plan.run('step', () => {
      startedStep()
      return new Promise<string>((resolve) => (finish = resolve))
    })
  })
  expect(refdTimers()).toBe(before + 1)
  await started
  finish('done')
  await expect(pending).resolves.toBe('done')
  expect(refdTimers()).toBe(before)
  deadline.dispose()
})

it('holds nothing on a test clock, for an observe-only slice, or one already over', async () => {
  const manual = new ManualClock()
  const before = refdTimers()
  const onManual = Deadline.after(1000, { clock: manual }).plan({ step: 1 })
  const a = onManual.run('step', () => new Promise<never>(() => {}))
  expect(refdTimers()).toBe(before)
  manual.advance(1000)
  await expect(a).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' })

  const { clock } = realTimeManual()
  const observed = Deadline.after(1000, { clock, observe: true })
  const b = observed.plan({ step: 1 }).run('step', () => 'ok')
  expect(refdTimers()).toBe(before)
  await expect(b).resolves.toBe('ok')

  const over = Deadline.after(0, { clock }).plan({ step: 1 })
  const c = over.run('step', () => 'never started')
  expect(refdTimers()).toBe(before)
  await expect(c).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' })
})
