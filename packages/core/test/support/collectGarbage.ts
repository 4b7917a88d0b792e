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
