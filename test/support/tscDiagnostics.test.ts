import { expect, it } from 'vitest'
import { tscDiagnostics } from './tscDiagnostics.js'

// typecheck.test.ts splits what one `tsc --pretty false` printed by file (the
// repo's, each README block's, the options tables'): a chained message must
// stay whole with its diagnostic, and nothing tsc prints may be dropped.
it('reads located, chained and global diagnostics, and keeps output that is none', () => {
  const output = [
    "a/b.ts(3,7): error TS2322: Type '{ x: string; }' is not assignable to type 'Options'.",
    "  Types of property 'x' are incompatible.",
    "    Type 'string' is not assignable to type 'number'.",
    "error TS5083: Cannot read file '/repo/tsconfig.json'.",
    'RangeError: Maximum call stack size exceeded',
    "c.ts(10,1): error TS1005: ';' expected.",
    '',
  ].join('\n')
  const found = tscDiagnostics(output)
  expect(found.map(({ file, line, code }) => ({ file, line, code }))).toEqual([
    { file: 'a/b.ts', line: 3, code: 'TS2322' },
    { file: undefined, line: 0, code: 'TS5083' },
    { file: undefined, line: 0, code: '' },
    { file: 'c.ts', line: 10, code: 'TS1005' },
  ])
  expect(found[0]?.message.join('\n')).toBe(
    "Type '{ x: string; }' is not assignable to type 'Options'.\n" +
      "  Types of property 'x' are incompatible.\n" +
      "    Type 'string' is not assignable to type 'number'.",
  )
  expect(found.map((d) => d.text).join('\n')).toBe(output.trimEnd())
})
