/**
 * @internal Call one listener so that its throw stops neither the other
 * listeners nor the abort of the children (a throw midway left work running
 * and the deadline half ended). The error is still uncaught, on the next
 * tick: what an `EventTarget` does with a throwing `abort` listener. Not
 * exported from the package.
 */
export function isolated(fn: () => void): void {
  try {
    fn()
  } catch (error) {
    process.nextTick(() => {
      throw error
    })
  }
}
