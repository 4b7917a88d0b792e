import { expect, it } from 'vitest'
import type { Snippet } from './readmeSnippets.js'
import { snippetLocation, snippetModule } from './snippetModule.js'

const snippet: Snippet = {
  readme: 'packages/core/README.md',
  firstLine: 20,
  preambleLine: 18,
  preamble: "import { x } from 'y'\ndeclare const z: number",
  code: 'function f() {\n  return z',
  skip: undefined,
}

it('maps a line of the module a block is checked as to its README line', () => {
  expect(snippetModule(snippet)).toBe(
    "import { x } from 'y'\ndeclare const z: number\nfunction f() {\n  return z\nexport {}\n",
  )
  expect(snippetLocation(snippet, 2)).toBe('packages/core/README.md:18 (preamble)')
  expect(snippetLocation(snippet, 3)).toBe('packages/core/README.md:20')
  expect(snippetLocation(snippet, 4)).toBe('packages/core/README.md:21')
})

it('puts an error past the block (a brace it left open, found at the end of the file) on its last line', () => {
  // tsc reports "'}' expected" at the end of the file: the line after the
  // appended `export {}`, two past the block, the README's next line but one.
  expect(snippetLocation(snippet, 5)).toBe('packages/core/README.md:21')
  expect(snippetLocation(snippet, 6)).toBe('packages/core/README.md:21')
  expect(snippetLocation({ ...snippet, preamble: undefined }, 4)).toBe('packages/core/README.md:21')
})
