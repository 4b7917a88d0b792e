import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseHeader } from '../../packages/cli/src/probe/parseHeader.js'
import { docPaths } from '../support/docPaths.js'

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

/** GitHub's anchors for a markdown file's headings (lower case, punctuation dropped, spaces → `-`, repeats numbered). */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
    if (/^ {0,3}(```|~~~)/.test(line)) fenced = !fenced
    const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!heading) continue
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

describe('README anchors', () => {
  const root = fileURLToPath(new URL('../../', import.meta.url))
  const docs = [
    'README.md',
    ...readdirSync(path.join(root, 'packages'))
      .map((name) => path.join('packages', name, 'README.md'))
      .filter((file) => existsSync(path.join(root, file))),
    ...docPaths(),
  ]

  it.each(docs)(
    '%s: every #anchor into a markdown file of the repo names one of its headings',
    (doc) => {
      const text = readFileSync(path.join(root, doc), 'utf8')
      const broken: string[] = []
      for (const m of text.matchAll(/\]\(([^)\s]*#[^)\s]+)\)/g)) {
        const [target = '', anchor = ''] = m[1]!.split('#')
        const inRepo =
          /^https:\/\/github\.com\/hourglass-dev\/hourglass\/(?:blob|tree)\/main\/(.+)$/.exec(
            target,
          )
        if (target !== '' && !inRepo && /^[a-z]+:/i.test(target)) continue // another site
        const file = inRepo
          ? path.join(root, inRepo[1]!)
          : path.join(root, path.dirname(doc), target === '' ? path.basename(doc) : target)
        // A folder's `#readme` is GitHub's own anchor for the README it shows.
        if (!existsSync(file) || statSync(file).isDirectory() || !file.endsWith('.md')) continue
        if (!anchorsOf(file).has(decodeURIComponent(anchor))) broken.push(m[1]!)
      }
      expect(broken).toEqual([])
    },
  )
})
