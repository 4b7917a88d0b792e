import { Deadline, ManualClock, runningSlice } from '@hourglass/core'
import { expect, it } from 'vitest'

// Only the last plan made under a deadline is kept. A step `run` started in
// an earlier plan under it (a budget on trial's) is still pending — `run`
// ends its slice — but once a later plan under it finished, nothing read the
// earlier one: a server's 504 named no slice at all.

/** A step that never settles by itself; ends when its slice does. */
const pendingStep = (signal: AbortSignal) =>
  new Promise<never>((_resolve, reject) =>
    signal.addEventListener('abort', () => reject(signal.reason)),
  )

it.each([
  ['on the same deadline under it', true],
  ['on another deadline under it', false],
])(
  'names the step run() started in an earlier plan under the deadline, a later plan %s over',
  async (_name, same) => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    const trial = request.child(800, { observe: true })
    const fetching = trial
      .plan({ fetch: 1 }, { reserveMs: 0 })
      .run('fetch', pendingStep)
      .catch(() => {})
    const other = same ? trial : request.child(100)
    await other.plan({ lookup: 1 }, { reserveMs: 0 }).run('lookup', async () => 'found')
    expect(runningSlice(request)).toBe('fetch')
    request.cancel()
    await fetching
    expect(runningSlice(request)).toBeUndefined()
  },
)

it('two levels down, read from the deadline in between too', async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const cap = request.child(900)
  const trial = cap.child(800, { observe: true })
  const fetching = trial
    .plan({ fetch: 1 }, { reserveMs: 0 })
    .run('fetch', pendingStep)
    .catch(() => {})
  await cap
    .child(100)
    .plan({ lookup: 1 }, { reserveMs: 0 })
    .run('lookup', async () => 'found')
  expect([runningSlice(request), runningSlice(cap), runningSlice(trial)]).toEqual([
    'fetch',
    'fetch',
    'fetch',
  ])
  // Not under another deadline of the chain: a sibling sees none of it.
  expect(runningSlice(request.child(50))).toBeUndefined()
  request.cancel()
  await fetching
  expect(runningSlice(request)).toBeUndefined()
})

it('the later of two pending steps under it is named, then the earlier once that one ended', async () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const a = request.child(800).plan({ a: 1 }, { reserveMs: 0 })
  const b = request.child(800).plan({ b: 1 }, { reserveMs: 0 })
  const first = a.run('a', pendingStep).catch(() => {})
  let finish = (): void => {}
  const second = b.run('b', () => new Promise<void>((resolve) => (finish = resolve)))
  await request
    .child(10)
    .plan({ c: 1 }, { reserveMs: 0 })
    .run('c', async () => {})
  expect(runningSlice(request)).toBe('b')
  finish()
  await second
  expect(runningSlice(request)).toBe('a')
  request.cancel()
  await first
})
