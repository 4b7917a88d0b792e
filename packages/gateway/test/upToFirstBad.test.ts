import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { upToFirstBad } from '../src/http/upToFirstBad.js'

/** A string schema that counts the elements it reads. */
function counted() {
  const seen = { count: 0 }
  const element = z.string().refine(() => {
    seen.count++
    return true
  })
  return { seen, element }
}

describe('upToFirstBad: a list read up to its first bad element', () => {
  it('needs no zod newer than the ^4.1 the gateway takes (validate() came with 4.6)', () => {
    // Under zod 4.5, any list past 1,000 elements threw "element.validate is
    // not a function": a 500 for a valid request.
    const element = z.string()
    Object.defineProperty(element, 'validate', {
      value: () => {
        throw new TypeError('element.validate is not a function')
      },
    })
    const list = upToFirstBad(element)
    expect(list.safeParse(Array(1_001).fill('x')).data).toHaveLength(1_001)
    const refused = list.safeParse([...Array(1_000).fill('x'), 1])
    expect(refused.error?.issues.map((i) => i.path)).toEqual([[1_000]])
  })

  it('reads no element past the first bad one, at any length', () => {
    const { seen, element } = counted()
    const list = upToFirstBad(element)
    const result = list.safeParse(['a', 'b', 1, 'c', 2, ...Array(10).fill(3)])
    expect(result.error?.issues).toHaveLength(1)
    expect(result.error?.issues[0]?.path).toEqual([2])
    expect(seen.count).toBe(2)
  })

  it("refuses a list past its max, or no list, with the list's own message and no element read", () => {
    const { seen, element } = counted()
    const list = upToFirstBad(element, {
      error: 'expected a list',
      min: [1, { error: 'expected one or more' }],
      max: [3, { error: 'expected at most 3' }],
    })
    const messages = (value: unknown) => list.safeParse(value).error?.issues.map((i) => i.message)
    expect(messages(Array(100_000).fill('a'))).toEqual(['expected at most 3'])
    expect(messages([])).toEqual(['expected one or more'])
    expect(messages('a')).toEqual(['expected a list'])
    expect(seen.count).toBe(0)
    expect(list.safeParse(['a', 'b', 'c']).data).toEqual(['a', 'b', 'c'])
  })
})
