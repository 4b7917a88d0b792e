import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseHeader } from '../../packages/cli/src/probe/parseHeader.js'

// The `-H` headers the READMEs show are meant to be pasted: each must be one
// the CLI accepts (a pasted '…' placeholder is refused with exit 2). A
// variable (`$API_TOKEN`) stands for what the shell puts there.
const readmes = ['README.md', 'packages/cli/README.md']

function shellHeaders(readme: string): string[] {
  const text = readFileSync(new URL(`../../${readme}`, import.meta.url), 'utf8')
  const blocks = [...text.matchAll(/^```(?:sh|bash|console)\n([\s\S]*?)^```/gm)].map((m) => m[1]!)
  const headers: string[] = []
  for (const block of blocks) {
    for (const m of block.matchAll(/(?:-H|--header)\s+(?:'([^']*)'|"([^"]*)")/g)) {
      headers.push(m[1] ?? m[2]!.replace(/\$\{?[A-Z_][A-Z0-9_]*\}?/g, 'sk-example'))
    }
  }
  return headers
}

describe('README command lines', () => {
  it.each(readmes)('%s: every -H header shown is one probe accepts', (readme) => {
    const headers = shellHeaders(readme)
    expect(headers.length).toBeGreaterThan(0)
    for (const header of headers) expect(() => parseHeader(header), header).not.toThrow()
  })

  it.each(readmes)('%s: every relative link points at a file or folder that exists', (readme) => {
    const root = fileURLToPath(new URL('../../', import.meta.url))
    const text = readFileSync(path.join(root, readme), 'utf8')
    const targets = [...text.matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1]!.split('#')[0]!)
      .filter((target) => target !== '' && !/^[a-z]+:/i.test(target))
    // The root README links into the repository; a package's README, shipped
    // alone by npm, links elsewhere by URL (test/packaging.test.ts).
    if (readme === 'README.md') expect(targets.length).toBeGreaterThan(0)
    const missing = targets.filter((t) => !existsSync(path.join(root, path.dirname(readme), t)))
    expect(missing).toEqual([])
  })
})
