import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { optionTablesModule } from './docs/optionTables.js'
import { readmeSnippets, type Snippet } from './support/readmeSnippets.js'
import { type TscDiagnostic, tscDiagnostics } from './support/tscDiagnostics.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const tsc = createRequire(import.meta.url).resolve('typescript/lib/tsc.js')
const projectDir = path.join(root, 'node_modules', '.cache', 'readme-snippets')

// `npm run typecheck`, run by `npm test` as the first file of the `parallel`
// project (vitest.config.ts starts it first): `tsc` works alone on one core
// for ~25 s, and beside the parallel files it uses CPU they leave idle,
// where as a step before Vitest it held everything else back.
//
// The same `tsc` run type-checks every ```ts block of the READMEs and
// reference pages (docs/readmeSnippets.test.ts checks their comments) and
// the options tables' module (docs/optionTables.ts): one program, so the
// ~1,400 files of the packages and their libraries are loaded and checked
// once, not once for `npm run typecheck` and again for the docs (~11 s of
// CPU more). The project in node_modules/.cache/readme-snippets/ extends
// tsconfig.json, so it checks every file that does with its options
// (declaration diagnostics included), and lists the blocks and the tables'
// module as further `files`; tsc's diagnostics are then split by file: the
// repo's, each block's (as README:line), each table option's.
it('is what npm run typecheck runs, and npm test runs it here, not again before Vitest', () => {
  const { scripts } = JSON.parse(readFileSync(`${root}package.json`, 'utf8'))
  expect(scripts.typecheck).toBe('tsc -p tsconfig.json')
  expect(scripts.test).toBe('turbo run build:emit lint --output-logs=errors-only && vitest run')
})

interface Checked {
  /** What tsc printed about the repo's own files (tsconfig.json's), as printed. */
  repo: string
  /** Each block's diagnostics, as `README:line: TSnnnn: message`. */
  snippets: string[]
  blocks: number
  /** Each table option's diagnostics, as `doc (heading): option \`name\`: message`. */
  tables: string[]
  options: number
  exitCode: number | null
}

let checked: Promise<Checked> | undefined
/** The one tsc run, shared by the tests below (each may also run alone). */
const typecheck = () => (checked ??= run())

async function run(): Promise<Checked> {
  const blocks = readmeSnippets().snippets.filter((s) => s.skip === undefined)
  rmSync(projectDir, { recursive: true, force: true })
  mkdirSync(projectDir, { recursive: true })
  // ESM, like every package here: top-level await and `import x from` work.
  writeFileSync(path.join(projectDir, 'package.json'), '{ "type": "module" }\n')

  const byFile = new Map<string, Snippet>()
  for (const s of blocks) {
    const name = `${s.readme.replace(/[\\/]/g, '_').replace(/\.md$/, '')}_L${s.firstLine}.ts`
    const preamble = s.preamble === undefined ? '' : `${s.preamble}\n`
    // Each block is its own module, even one with no import or export: so
    // said `moduleDetection: force` when the blocks had a program of their
    // own (`nodenext` implies it today, but the repo's option is not the
    // blocks' to set). After the block, so its lines keep their README numbers.
    writeFileSync(path.join(projectDir, name), `${preamble}${s.code}\nexport {}\n`)
    byFile.set(path.join(projectDir, name), s)
  }
  const tables = optionTablesModule()
  const tablesFile = path.join(projectDir, 'option-tables.ts')
  writeFileSync(tablesFile, tables.source)
  // `include` and every option come from tsconfig.json (its `include`,
  // relative to it); `files` adds the blocks and the tables.
  const files = [...byFile.keys(), tablesFile].map((file) => `./${path.basename(file)}`)
  const project = { extends: path.relative(projectDir, path.join(root, 'tsconfig.json')), files }
  writeFileSync(path.join(projectDir, 'tsconfig.json'), `${JSON.stringify(project, null, 2)}\n`)

  const child = spawn(process.execPath, [tsc, '-p', projectDir, '--pretty', 'false'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve))

  const repo: string[] = []
  const snippets: string[] = []
  const tableProblems: string[] = []
  const tableLines = tables.source.split('\n')
  for (const d of tscDiagnostics(out)) {
    const file = d.file === undefined ? undefined : path.resolve(root, d.file)
    const snippet = file === undefined ? undefined : byFile.get(file)
    if (snippet) snippets.push(`${where(snippet, d)}: ${d.code}: ${d.message.join('\n')}`)
    else if (file === tablesFile) {
      const n = /^export const k(\d+)/.exec(tableLines[d.line - 1] ?? '')?.[1]
      const message = d.message.map((m) => m.trim()).join(' ')
      const option = n === undefined ? tableLines[d.line - 1] : tables.options[Number(n)]
      tableProblems.push(`${option}: ${message}`)
    } else repo.push(d.text)
  }
  return {
    repo: repo.join('\n'),
    snippets,
    blocks: blocks.length,
    tables: tableProblems,
    options: tables.options.length,
    exitCode,
  }
}

/** `README:line`, or `README:line (preamble)`, of a diagnostic in a block's file. */
function where(snippet: Snippet, d: TscDiagnostic): string {
  const line = d.line - 1 // 0-based in the file
  const preambleLines = snippet.preamble === undefined ? 0 : snippet.preamble.split('\n').length
  return line < preambleLines
    ? `${snippet.readme}:${snippet.preambleLine} (preamble)`
    : `${snippet.readme}:${snippet.firstLine + line - preambleLines}`
}

it('npm run typecheck passes: tsc -p tsconfig.json over every source, test, example and benchmark, declaration emit included', {
  timeout: 300_000,
}, async () => {
  const { repo, snippets, tables, exitCode } = await typecheck()
  expect(repo, 'tsc -p tsconfig.json reported').toBe('')
  // No diagnostic anywhere, so tsc must have ended well (not crashed, not killed).
  if (snippets.length === 0 && tables.length === 0) expect(exitCode).toBe(0)
})

it('README code blocks type-check against the current packages', { timeout: 300_000 }, async () => {
  const { snippets, blocks } = await typecheck()
  expect(blocks).toBeGreaterThan(0)
  expect(snippets, `checked ${blocks} blocks`).toEqual([])
})

it('every option an options table lists is a key of the options its function takes', {
  timeout: 300_000,
}, async () => {
  const { tables, options } = await typecheck()
  expect(options).toBeGreaterThan(50)
  expect(tables, `checked ${options} options`).toEqual([])
})
