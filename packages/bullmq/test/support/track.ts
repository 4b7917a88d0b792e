/**
 * What a promise has come to so far, readable synchronously after a turn of
 * the loop: `'pending'`, `'fulfilled'`, or its rejection reason. For tests
 * that move a manual clock and then check that a call has ended by then.
 */
export function track(promise: Promise<unknown>): { readonly outcome: unknown } {
  const tracked = { outcome: 'pending' as unknown }
  promise.then(
    () => {
      tracked.outcome = 'fulfilled'
    },
    (error: unknown) => {
      tracked.outcome = error
    },
  )
  return tracked
}
