import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * Whether `ref`'s target is garbage-collected within a few full
 * collections, in a process not started with --expose-gc: the flag exposes
 * `gc` to contexts made after it is set, and is unset at once (core's test
 * support does the same). One collection is not always enough: a closed
 * socket's native handle, and what it reaches, goes a loop turn later. Each
 * try waits for a setImmediate first: a WeakRef's target is kept until the
 * job that made or read it has ended.
 *
 * A request is held for up to 1 s by Node's Date header cache when its
 * response armed the cache's timer (inside the request's context): set
 * `res.sendDate = false` in a handler whose request is checked.
 */
export async function collected(ref: WeakRef<object> | undefined, tries = 5): Promise<boolean> {
  if (ref === undefined) return false
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  setFlagsFromString('--no-expose-gc')
  for (let i = 0; i < tries; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    if (ref.deref() === undefined) return true
  }
  return false
}
