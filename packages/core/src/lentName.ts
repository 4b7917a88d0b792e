/**
 * Deadlines whose name was lent by an ancestor (made without one under a
 * named deadline: a step's own timeout in its slice), and the deadline
 * errors named with such a name. The name tells where the time ran out; it
 * does not make the error the slice's own: a slice still reports its
 * nameless child's error as its own (its budget, the child's error as
 * `cause`), as it did when that error had no name. A `WeakSet`, touched
 * only for those deadlines and at their expiry: nothing on a named or root
 * deadline's path.
 */
const lent = new WeakSet<object>()

/** Mark a deadline (or a deadline error) as named with a name lent by an ancestor. */
export function lendName(target: object): void {
  lent.add(target)
}

/** Whether `target`'s name (a deadline's `name`, an error's `slice`) was lent by an ancestor. */
export function isNameLent(target: unknown): boolean {
  return typeof target === 'object' && target !== null && lent.has(target)
}

/** The name an error carries as its own: `undefined` for one lent by an ancestor. */
export function ownSlice(error: { slice: string | undefined }): string | undefined {
  return isNameLent(error) ? undefined : error.slice
}
