import { AsyncLocalStorage } from 'node:async_hooks'
import type { Deadline } from './Deadline.js'

// One store per process *per copy of this module*. Two installed copies of
// @hourglass/core would not see each other's context, so it is kept on a
// global symbol: every copy shares the first one created.
const KEY = Symbol.for('@hourglass/core.context')
const holder = globalThis as { [KEY]?: AsyncLocalStorage<Deadline> }
holder[KEY] ??= new AsyncLocalStorage<Deadline>()
const storage: AsyncLocalStorage<Deadline> = holder[KEY]

/** Run `fn` with `deadline` as the current deadline for everything it starts. */
export function runWithDeadline<T>(deadline: Deadline, fn: () => T): T {
  return storage.run(deadline, fn)
}

/** The deadline of the work in progress, or undefined outside any. */
export function currentDeadline(): Deadline | undefined {
  return storage.getStore()
}

/** Milliseconds left on the current deadline; Infinity when there is none. */
export function remainingMs(): number {
  const deadline = storage.getStore()
  return deadline ? deadline.remaining() : Number.POSITIVE_INFINITY
}
