import {
  ClientClosedError,
  DeadlineExceededError,
  HourglassError,
  SliceAlreadyStartedError,
  SliceNotStartedError,
  UnknownSliceError,
} from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'

// A bundler that minifies class names (esbuild's and rolldown's `--minify`)
// renames `DeadlineExceededError` to `e`: its errors were named `e`, and
// every log line, stack and span read `e: deadline exceeded …`. Simulated by
// giving each class the name a minifier would. (Every package's errors
// declare their `errorName` the same way: `test/errorNamesDeclared.test.ts`
// at the repo's root checks each one.)
const classes = {
  HourglassError: () => new HourglassError('SOME_CODE', 'something'),
  DeadlineExceededError: () => new DeadlineExceededError({ budgetMs: 10, elapsedMs: 10 }),
  ClientClosedError: () => new ClientClosedError(),
  UnknownSliceError: () => new UnknownSliceError('x', ['a']),
  SliceAlreadyStartedError: () => new SliceAlreadyStartedError('a'),
  SliceNotStartedError: () => new SliceNotStartedError('a'),
}
const types = {
  HourglassError,
  DeadlineExceededError,
  ClientClosedError,
  UnknownSliceError,
  SliceAlreadyStartedError,
  SliceNotStartedError,
}

afterEach(() => {
  for (const [name, type] of Object.entries(types)) {
    Object.defineProperty(type, 'name', { value: name, configurable: true })
  }
})

describe('Hourglass errors keep their names in a minified bundle', () => {
  for (const [name, make] of Object.entries(classes)) {
    it(`${name} is named ${name} whatever its class is called`, () => {
      Object.defineProperty(types[name as keyof typeof types], 'name', {
        value: 'e',
        configurable: true,
      })
      const error = make()
      expect(error.name).toBe(name)
      expect(String(error).startsWith(`${name}: `)).toBe(true)
    })
  }

  it("a subclass of the app's own keeps its class name", () => {
    class UpstreamTimeout extends DeadlineExceededError {}
    expect(new UpstreamTimeout({ budgetMs: 1, elapsedMs: 1 }).name).toBe('UpstreamTimeout')
  })
})
