import { describe, expect, it } from 'vitest'
import { readmeSnippets } from '../support/readmeSnippets.js'

// Every ```ts / ```typescript block in the root README, each package's
// README and each package's reference pages (packages/*/docs/*.md) is
// type-checked against the packages' current sources (through the
// "@hourglass/source" export condition: no build needed) with the repo's own
// strict options, in the program of `npm run typecheck`: typecheck.test.ts
// runs it, once for the repo and the blocks (and the options tables). A
// fragment that uses names it does not declare gets them from an HTML comment
// placed right before its fence (invisible on GitHub):
//
//   <!-- snippet-preamble: import express from 'express'; const app = express() -->
//   <!-- snippet: skip (pseudo-code: the shape of a report, not code) -->
//
// The preamble is prepended to the block when it is checked; skip leaves the
// block out and must give a reason. This file checks the comments. See
// test/README.md.

describe('README code blocks', () => {
  it('finds the blocks; every directive sits right before one and every skip gives its reason', () => {
    const { snippets, strayDirectives } = readmeSnippets()
    expect(snippets.filter((s) => s.skip === undefined).length).toBeGreaterThan(0)
    expect(strayDirectives, 'snippet comments not right before a ```ts fence').toEqual([])
    for (const s of snippets) if (s.skip !== undefined) expect(s.skip).not.toBe('')
  })
})
