import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * A full garbage collection, in a process not started with --expose-gc: the
 * flag exposes `gc` to contexts made after it is set (jest's leak detector
 * does the same), and is unset at once. About 30 ms in a test worker;
 * `v8.queryObjects` answered the same question in ~200 ms a call.
 *
 * Call it after the job that made the WeakRefs has ended (await a
 * setImmediate): a WeakRef's target is kept until then whatever else holds it.
 */
export function collectGarbage(): void {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  setFlagsFromString('--no-expose-gc')
  gc()
}

/**
 * How many of `refs` still reach their target after up to `rounds` full
 * collections, each after the current job ended. One round answers for a
 * leak; more let a target that something else held only for a moment (a
 * test worker shares its process with the files before) go, which a leak,
 * held for good, never does: one run in a shared worker kept 2 of 40 after
 * one round, and the same test passed alone every time.
 */
export async function stillReachable(
  refs: readonly WeakRef<object>[],
  rounds = 3,
): Promise<number> {
  let alive = refs.length
  for (let i = 0; i < rounds && alive > 0; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    collectGarbage()
    alive = refs.filter((ref) => ref.deref() !== undefined).length
  }
  return alive
}
