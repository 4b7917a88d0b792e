import { describe, expect, it } from 'vitest'
import { MAX_BODY_DEPTH, tooDeepField } from '../src/http/jsonDepthLimit.js'
import { bodyShapeProblem, keyLimitProblem, MAX_KEYS_PER_OBJECT } from '../src/http/jsonKeyLimit.js'

const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)
const deepObjects = (levels: number) => '{"k":'.repeat(levels) + '1' + '}'.repeat(levels)
/** A message long enough (60,000 characters) that the body gets the key count too. */
const long = JSON.stringify('x "[{: '.repeat(8_600))
const manyKeys = `{${Array.from({ length: MAX_KEYS_PER_OBJECT + 1 }, (_, i) => `"k${i}":1`).join(',')}}`

/**
 * A body long enough to hold too many keys (over 50,000 characters) is read
 * once for its keys and its depth together, where it was read twice: the
 * one pass answers as the two did — the key problem first, else the field
 * `tooDeepField` names, also for text that is not JSON.
 */
describe('bodyShapeProblem on a long body: keys and depth in one pass', () => {
  const bodies: Record<string, string> = {
    'deep in a field after a long message': `{"m":${long},"bc":${deep(MAX_BODY_DEPTH)}}`,
    'deep objects in a field': `{"m":${long},"t":${deepObjects(MAX_BODY_DEPTH + 1)}}`,
    'just within the depth': `{"m":${long},"t":${deep(MAX_BODY_DEPTH - 1)}}`,
    'an escaped key': `{"m":${long},"b\\u0063" : ${deep(MAX_BODY_DEPTH)}}`,
    'a nested key, named by its top-level field': `{"a":{"m":${long},"k":${deep(MAX_BODY_DEPTH)}}}`,
    'the body itself': `[${long},${deep(MAX_BODY_DEPTH)}]`,
    'after a value, no key': `{"m":${long},${'['.repeat(MAX_BODY_DEPTH)}`,
    'a top-level array with a colon': `[${long} : ${deep(MAX_BODY_DEPTH)}]`,
    'unterminated after the excess': `{"a":${'['.repeat(MAX_BODY_DEPTH + 1)}${long}"open`,
    'unterminated before it': `{"m":${long},"a":"open ${'['.repeat(1000)}`,
    fine: `{"model":"m","messages":[{"role":"user","content":${long}}]}`,
  }
  for (const [name, body] of Object.entries(bodies)) {
    it(`${name}: the field tooDeepField names`, () => {
      expect(body.length).toBeGreaterThan(50_000)
      const field = tooDeepField(body)
      expect(bodyShapeProblem(body)).toEqual(
        field === undefined ? undefined : { kind: 'depth', field },
      )
    })
  }

  it('too many keys wins over too deep, wherever each is', () => {
    const tooDeepFirst = `{"d":${deep(MAX_BODY_DEPTH + 5)},"x":${manyKeys}}`
    const keysFirst = `{"x":${manyKeys},"d":${deep(MAX_BODY_DEPTH + 5)}}`
    for (const body of [tooDeepFirst, keysFirst]) {
      expect(bodyShapeProblem(body)).toEqual({ kind: 'keys', message: keyLimitProblem(body) })
      expect(keyLimitProblem(body)).toContain(`more than ${MAX_KEYS_PER_OBJECT} keys`)
    }
  })

  it('a short body gets the depth scan alone', () => {
    expect(bodyShapeProblem(`{"a":${deep(MAX_BODY_DEPTH)}}`)).toEqual({ kind: 'depth', field: 'a' })
    expect(bodyShapeProblem('{"a":1}')).toBeUndefined()
  })
})
