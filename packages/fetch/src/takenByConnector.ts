/**
 * The `tls` objects and `lookup` functions a `createConnector` of the
 * caller's took: the same value beside a `dispatcher` in `createFetch` is
 * in force through that dispatcher's connector, not dropped — one options
 * object spread into both, as the README's setup does. Weak: a connector's
 * values go when nothing else holds them.
 */
const taken = new WeakSet<object>()

/** Record what a connector of the caller's was given (`createConnector`). */
export function markTakenByConnector(options: { tls?: unknown; lookup?: unknown }): void {
  for (const value of [options.tls, options.lookup]) {
    if ((typeof value === 'object' && value !== null) || typeof value === 'function')
      taken.add(value)
  }
}

/** Whether `value` is a `tls` or `lookup` some `createConnector` took. */
export function isTakenByConnector(value: unknown): boolean {
  return (
    ((typeof value === 'object' && value !== null) || typeof value === 'function') &&
    taken.has(value)
  )
}
