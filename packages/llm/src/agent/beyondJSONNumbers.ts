import { nonFiniteIn } from '../call/nonFiniteIn.js'
import type { ContentBlock } from '../types.js'

/**
 * A number in a tool call's arguments that JSON writes as `null` (a
 * model's `{"t":1e999}` reads as Infinity): the call's place in the
 * answer's `content`, the number's path in its arguments (keys and array
 * indexes; empty when the arguments are that number) and the number as
 * text (`"Infinity"`, `"-Infinity"`, `"NaN"`), which JSON keeps.
 */
export interface BeyondJSONNumber {
  block: number
  path: (string | number)[]
  value: string
}

/**
 * Every number beyond JSON's range in `content`'s tool calls, or undefined
 * when there is none (most answers: only calls `nonFiniteIn` finds one in
 * are walked). Walked with a stack, not recursion, each object once: a
 * custom `call`'s arguments may nest deeper than the stack allows, or
 * refer to themselves.
 */
export function beyondJSONNumbers(
  content: readonly ContentBlock[],
): BeyondJSONNumber[] | undefined {
  const found: BeyondJSONNumber[] = []
  content.forEach((block, index) => {
    if (block.type !== 'tool_call' || nonFiniteIn(block.arguments) === undefined) return
    const seen = new Set<object>()
    // Each value with its parent's step: a path is built only for a number found.
    const stack: Step[] = [{ value: block.arguments, key: undefined, parent: undefined }]
    while (stack.length > 0) {
      const step = stack.pop() as Step
      const { value } = step
      if (typeof value === 'number') {
        if (!Number.isFinite(value)) {
          found.push({ block: index, path: pathOf(step), value: String(value) })
        }
        continue
      }
      if (typeof value !== 'object' || value === null || seen.has(value)) continue
      seen.add(value)
      const keys = Array.isArray(value) ? [...value.keys()] : Object.keys(value)
      for (const key of keys) {
        stack.push({ value: (value as Record<string | number, unknown>)[key], key, parent: step })
      }
    }
  })
  return found.length === 0 ? undefined : found
}

interface Step {
  value: unknown
  key: string | number | undefined
  parent: Step | undefined
}

function pathOf(step: Step): (string | number)[] {
  const path: (string | number)[] = []
  for (let at: Step | undefined = step; at?.key !== undefined; at = at.parent) path.push(at.key)
  return path.reverse()
}

/**
 * Puts back in `content` (an answer read again from a store) the numbers
 * `beyondJSONNumbers` found in it, where JSON left `null` for them: the
 * calls read as the first run read them, so they are refused again, and
 * their history and results are the ones it wrote. Where `null` is not
 * found (a store that kept the number, or rebuilt the answer otherwise)
 * nothing is changed.
 */
export function restoreBeyondJSON(
  content: readonly ContentBlock[],
  numbers: readonly unknown[],
): void {
  for (const entry of numbers) {
    // A custom store's record rebuilt otherwise: nothing to put back.
    const { block: index, path, value } = (entry ?? {}) as Partial<BeyondJSONNumber>
    if (typeof index !== 'number' || !Array.isArray(path) || typeof value !== 'string') continue
    const number = Number(value)
    const block = content[index]
    if (Number.isFinite(number) || block?.type !== 'tool_call') continue
    if (path.length === 0) {
      if (block.arguments === null) block.arguments = number
      continue
    }
    let holder: unknown = block.arguments
    for (const key of path.slice(0, -1)) {
      holder =
        typeof holder === 'object' && holder !== null && Object.hasOwn(holder, key)
          ? (holder as Record<string | number, unknown>)[key]
          : undefined
    }
    const last = path.at(-1) as string | number
    if (typeof holder !== 'object' || holder === null || !Object.hasOwn(holder, last)) continue
    const record = holder as Record<string | number, unknown>
    if (record[last] === null) record[last] = number
  }
}
