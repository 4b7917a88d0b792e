import { describe, expect, it } from 'vitest'
import { tscDiagnostics } from './tscDiagnostics.js'
import { hiddenBy, type TscEnd, tscCrash } from './tscVerdict.js'

// typecheck.test.ts decides from how its one tsc process ended whether a
// test may pass: a killed or crashed tsc must fail all of them, and a group
// with no errors of its own proves nothing when another group's errors
// stopped tsc before its later stages.
const crash = (end: TscEnd) => tscCrash(end, tscDiagnostics(end.output))
const error = "a.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.\n"

describe('tscCrash', () => {
  it('takes a clean run and a run that reported diagnostics as tsc answers', () => {
    expect(crash({ code: 0, signal: null, output: '' })).toBeUndefined()
    expect(crash({ code: 2, signal: null, output: error })).toBeUndefined()
    expect(crash({ code: 1, signal: null, output: error })).toBeUndefined()
  })

  it('names the code, the signal and the output of a tsc that did not finish', () => {
    // Killed (the OOM killer, a CI timeout) before it printed anything.
    expect(crash({ code: null, signal: 'SIGKILL', output: '' })).toBe(
      'tsc did not finish its check (exit code null, signal SIGKILL), and printed nothing',
    )
    // Out of memory: V8 aborts, after the diagnostics of nothing.
    expect(
      crash({
        code: null,
        signal: 'SIGABRT',
        output: 'FATAL ERROR: JavaScript heap out of memory\n',
      }),
    ).toBe(
      'tsc did not finish its check (exit code null, signal SIGABRT), and printed:\nFATAL ERROR: JavaScript heap out of memory',
    )
    // A throw inside tsc: exit 1 and a stack, no diagnostic.
    expect(
      crash({
        code: 1,
        signal: null,
        output: 'RangeError: Maximum call stack size exceeded\n    at f',
      }),
    ).toMatch(
      /^tsc did not finish its check \(exit code 1, signal null\), and printed:\nRangeError/,
    )
    expect(crash({ code: 1, signal: null, output: '' })).toMatch(/exit code 1, signal null/)
    expect(crash({ code: 3, signal: null, output: error })).toMatch(/exit code 3/)
    // Diagnostics and a clean exit contradict each other; so do diagnostics
    // and output that is none (the stack of a throw after the check).
    expect(crash({ code: 0, signal: null, output: error })).toMatch(/exit code 0/)
    expect(crash({ code: 2, signal: null, output: `${error}TypeError: x is undefined\n` })).toMatch(
      /TypeError: x is undefined$/,
    )
  })
})

it('hiddenBy names the other groups tsc reported errors in', () => {
  expect(hiddenBy('repo', { repo: 0, blocks: 0, tables: 0 })).toEqual([])
  expect(hiddenBy('repo', { repo: 0, blocks: 1, tables: 0 })).toEqual(['blocks'])
  // Its own errors fail it anyway.
  expect(hiddenBy('blocks', { repo: 2, blocks: 1, tables: 3 })).toEqual(['repo', 'tables'])
})
