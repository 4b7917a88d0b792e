import { expect, it } from 'vitest'
import { finishedInput } from '../../src/providers/wire/finishedInput.js'

/**
 * An unstreamed Anthropic answer cut inside a tool call's arguments carries
 * the call with an object `input`: the top-level members finished before
 * the cap, never a half-written value.
 */
it('keeps the top-level members finished, as written, and nothing begun', () => {
  expect(finishedInput('{"q')).toBe('{}')
  expect(finishedInput('{"a":1')).toBe('{}') // `1` of `12`: not known finished
  expect(finishedInput('{"a":1,"b":"lo')).toBe('{"a":1}')
  expect(finishedInput('{"a":"x, \\"y\\""')).toBe('{"a":"x, \\"y\\""}')
  expect(finishedInput('{"a":{"x":[1,2]},"b"')).toBe('{"a":{"x":[1,2]}}')
  expect(finishedInput('{"a":{"x":1,"y":')).toBe('{}')
  expect(finishedInput('{"n":12345678901234567890,')).toBe('{"n":12345678901234567890}')
  expect(finishedInput('[1,2')).toBe('{}')
})

it('gives up on malformed or non-object text after its last candidates, not after parsing every one', () => {
  // Every candidate parsed in turn made these quadratic: a 185 K-character
  // array took ~57 s (the fake's event loop held), past this test's timeout.
  const array = `[${Array.from({ length: 40_000 }, (_, i) => `"v${i}"`).join(',')}`
  expect(finishedInput(array)).toBe('{}')
  const strayComma = `{"a":1,,${Array.from({ length: 16_000 }, (_, i) => `"k${i}":${i}`).join(',')}`
  expect(finishedInput(strayComma)).toBe('{}')
})
