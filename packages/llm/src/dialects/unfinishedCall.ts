/**
 * An internal mark on a tool call whose end is not in what came of it, read
 * only together with the answer's `length` finish (`cutBeforeArguments`):
 * an OpenAI-compatible call whose server sent no argument text (its `{}` is
 * the parser's, not the model's: a call cut right after its name reads the
 * same), Anthropic's last `tool_use` of an answer stopped at its token limit
 * (its `input` the members finished before the cut). Read from the arguments
 * alone, `{}` written whole before the cap looked cut, and Anthropic's
 * `{ to }` without its body looked whole.
 *
 * A symbol property, not enumerable: no public type names it, no request
 * builder writes it (they write each field by name), JSON drops it, and
 * `toEqual` does not see it. A spread copy drops it too: whoever copies a
 * block keeps it with `keepUnfinished`.
 */
const UNFINISHED: unique symbol = Symbol('hourglass.unfinishedToolCall')

/** Marks `value` (a tool call block, a stream event) unfinished; returns it. */
export function markUnfinished<T extends object>(value: T): T {
  Object.defineProperty(value, UNFINISHED, { value: true, configurable: true })
  return value
}

/** Whether `value` carries the mark. */
export function isMarkedUnfinished(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [UNFINISHED]?: unknown })[UNFINISHED] === true
  )
}

/** `copy`, marked when `original` was. */
export function keepUnfinished<T extends object>(original: object, copy: T): T {
  return isMarkedUnfinished(original) ? markUnfinished(copy) : copy
}
