/** A failure's reason as an Error, for what needs one (an abort's argument): an Error as it is, anything else wrapped with it as the cause. */
export function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason), { cause: reason })
}
