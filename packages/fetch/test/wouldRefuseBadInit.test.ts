import { Deadline } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { createFetch, type HourglassFetch } from '../src/index.js'
import { rejection } from './helpers.js'

// `fetch.wouldRefuse()` is the call's own check, so what the call refuses
// as a programming error it refuses too, with the call's TypeError: a
// `deadline` that is no Deadline (a number of ms) threw "deadline.remaining
// is not a function" from inside it, and a `signal` that is no AbortSignal
// but has `aborted: true` was read as one. Nothing is sent here.

let fetch: HourglassFetch | undefined
afterEach(async () => {
  await fetch?.close()
})

function thrown(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}

it('refuses a deadline that is no Deadline with the call’s own TypeError', async () => {
  fetch = createFetch()
  const f = fetch
  const byCall = await rejection(f('http://127.0.0.1:9/', { deadline: 500 as never }))
  const byCheck = thrown(() => f.wouldRefuse({ deadline: 500 as never }))
  expect(byCheck).toBeInstanceOf(TypeError)
  expect((byCheck as Error).message).toBe((byCall as Error).message)
  expect((byCheck as Error).message).toMatch(/^deadline must be a Deadline/)
})

it('refuses a signal that is no AbortSignal with the call’s own TypeError', async () => {
  fetch = createFetch()
  const f = fetch
  const signal = { aborted: true } as never
  const byCall = await rejection(f('http://127.0.0.1:9/', { signal }))
  const byCheck = thrown(() => f.wouldRefuse({ signal }))
  expect(byCheck).toBeInstanceOf(TypeError)
  expect((byCheck as Error).message).toBe((byCall as Error).message)
})

it('still answers for a real deadline and signal, and for none', () => {
  fetch = createFetch()
  const deadline = Deadline.after(10_000)
  expect(fetch.wouldRefuse({ deadline, signal: new AbortController().signal })).toBe(false)
  expect(fetch.wouldRefuse({ deadline: undefined, signal: undefined })).toBe(false)
  expect(fetch.wouldRefuse({ signal: AbortSignal.abort() })).toBe(true)
  deadline[Symbol.dispose]()
})

it('refuses a dispatcher option that is no undici Dispatcher by name', () => {
  for (const dispatcher of [5, {}, 'agent']) {
    const error = thrown(() => createFetch({ dispatcher: dispatcher as never }))
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(/^dispatcher must be an undici Dispatcher/)
  }
})
