import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { optionTablesModule } from './docs/optionTables.js'
import { readmeSnippets, type Snippet } from './support/readmeSnippets.js'
import { snippetLocation, snippetModule } from './support/snippetModule.js'
import { tscDiagnostics } from './support/tscDiagnostics.js'
import { hiddenBy, type TscEnd, tscCrash } from './support/tscVerdict.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const tsc = createRequire(import.meta.url).resolve('typescript/lib/tsc.js')
const cacheDir = path.join(root, 'node_modules', '.cache')

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
// CPU more). The project, in a directory of the run's own under
// node_modules/.cache/ (readme-snippets-*, removed when tsc ends), extends
// tsconfig.json, so it checks every file that does with its options
// (declaration diagnostics included), and lists the blocks and the tables'
// module as further `files`; tsc's diagnostics are then split by file: the
// repo's, each block's (as README:line), each table option's.
//
// tsc runs a stage (syntax, types, declarations) only when the earlier ones
// found nothing in the whole program, so errors in one group may hide
// another's: the repo's test then runs `tsc -p tsconfig.json` alone, the
// others fail saying so (support/tscVerdict.ts). A tsc that was killed or
// crashed fails all three.
it('is what npm run typecheck runs, and npm test runs it here, not again before Vitest', () => {
  const { scripts } = JSON.parse(readFileSync(`${root}package.json`, 'utf8'))
  expect(scripts.typecheck).toBe('tsc -p tsconfig.json')
  expect(scripts.test).toBe('turbo run build:emit lint --output-logs=errors-only && vitest run')
})

/** The groups of files tsc's diagnostics are split into, each checked by a test below. */
type Group = 'repo' | 'blocks' | 'tables'

const GROUP_NAMES: Record<Group, string> = {
  repo: 'the repo\'s files (test "npm run typecheck passes")',
  blocks: 'the README code blocks (test "README code blocks type-check")',
  tables: 'the options tables (test "every option an options table lists")',
}

interface Checked {
  /** What tsc printed about the repo's own files (tsconfig.json's), as printed. */
  repo: string[]
  /** Each block's diagnostics, as `README:line: TSnnnn: message`. */
  snippets: string[]
  blocks: number
  /** What readmeSnippets() threw (a snippet comment it does not know): no block was checked. */
  readmeError: unknown
  /** Each table option's diagnostics, as `doc (heading): option \`name\`: message`. */
  tables: string[]
  options: number
  /** What optionTablesModule() threw (a heading reworded): no table was checked. */
  tablesError: unknown
  /** Each group's number of diagnostics. */
  errors: Record<Group, number>
  /** Why tsc's run is no answer (killed, crashed), if it is none. */
  crash: string | undefined
}

let checked: Promise<Checked> | undefined
/** The one tsc run, shared by the tests below (each may also run alone). */
const typecheck = () => (checked ??= run())

/** `tsc … --pretty false` in the repo root, to its end. */
async function runTsc(args: string[]): Promise<TscEnd> {
  // A 64 MB young generation (V8's default is 16 MB on 64-bit): tsc makes
  // short-lived objects by the million and spends much of its time in
  // scavenges; with it the same run took ~36 s of CPU instead of ~39 s
  // (medians of paired runs, on 2 cores), and its wall time ~4 s less.
  const child = spawn(
    process.execPath,
    ['--max-semi-space-size=64', tsc, ...args, '--pretty', 'false'],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, output }))
  })
}

async function run(): Promise<Checked> {
  // A README or table tsc cannot be given (a snippet comment the extraction
  // does not know, a heading a table no longer sits under) fails its own
  // test; the repo and the rest are still checked.
  let blocks: Snippet[] = []
  let readmeError: unknown
  try {
    blocks = readmeSnippets().snippets.filter((s) => s.skip === undefined)
  } catch (error) {
    readmeError = error
  }
  let tables: { source: string; options: string[] } | undefined
  let tablesError: unknown
  try {
    tables = optionTablesModule()
  } catch (error) {
    tablesError = error
  }

  // A directory of this run's own: another process running this file (a
  // second vitest in the same checkout) writes its own, not over the files
  // this run's tsc is reading.
  mkdirSync(cacheDir, { recursive: true })
  const projectDir = mkdtempSync(path.join(cacheDir, 'readme-snippets-'))
  const byFile = new Map<string, Snippet>()
  const tablesFile = path.join(projectDir, 'option-tables.ts')
  let end: TscEnd
  try {
    // ESM, like every package here: top-level await and `import x from` work.
    writeFileSync(path.join(projectDir, 'package.json'), '{ "type": "module" }\n')
    for (const s of blocks) {
      const name = `${s.readme.replace(/[\\/]/g, '_').replace(/\.md$/, '')}_L${s.firstLine}.ts`
      writeFileSync(path.join(projectDir, name), snippetModule(s))
      byFile.set(path.join(projectDir, name), s)
    }
    if (tables) writeFileSync(tablesFile, tables.source)
    // `include` and every option come from tsconfig.json (its `include`,
    // relative to it); `files` adds the blocks and the tables.
    const files = [...byFile.keys(), ...(tables ? [tablesFile] : [])].map(
      (file) => `./${path.basename(file)}`,
    )
    const project = { extends: path.relative(projectDir, path.join(root, 'tsconfig.json')), files }
    writeFileSync(path.join(projectDir, 'tsconfig.json'), `${JSON.stringify(project, null, 2)}\n`)
    end = await runTsc(['-p', projectDir])
  } finally {
    rmSync(projectDir, { recursive: true, force: true })
  }

  const diagnostics = tscDiagnostics(end.output)
  const repo: string[] = []
  const snippets: string[] = []
  const tableProblems: string[] = []
  const tableLines = tables?.source.split('\n') ?? []
  for (const d of diagnostics) {
    const file = d.file === undefined ? undefined : path.resolve(root, d.file)
    const snippet = file === undefined ? undefined : byFile.get(file)
    if (snippet)
      snippets.push(`${snippetLocation(snippet, d.line)}: ${d.code}: ${d.message.join('\n')}`)
    else if (tables && file === tablesFile) {
      const n = /^export const k(\d+)/.exec(tableLines[d.line - 1] ?? '')?.[1]
      const message = d.message.map((m) => m.trim()).join(' ')
      const option = n === undefined ? tableLines[d.line - 1] : tables.options[Number(n)]
      tableProblems.push(`${option}: ${message}`)
    } else repo.push(d.text)
  }
  return {
    repo,
    snippets,
    blocks: blocks.length,
    readmeError,
    tables: tableProblems,
    options: tables?.options.length ?? 0,
    tablesError,
    errors: { repo: repo.length, blocks: snippets.length, tables: tableProblems.length },
    crash: tscCrash(end, diagnostics),
  }
}

/**
 * Fails when tsc reported errors in another group than `group`: tsc then
 * skipped its later stages everywhere, so no error here proves nothing.
 */
function expectNotHidden(group: Group, errors: Record<Group, number>): void {
  const others = hiddenBy(group, errors).map((other) => GROUP_NAMES[other])
  expect(
    others,
    `not checked to the end: tsc reported errors in ${others.join(' and ')}, and after ` +
      'errors in one of its stages (syntax, then types, then declarations) it runs none of ' +
      'the later ones, for any file; fix those first',
  ).toEqual([])
}

it('npm run typecheck passes: tsc -p tsconfig.json over every source, test, example and benchmark, declaration emit included', {
  timeout: 300_000,
}, async () => {
  const { repo, errors, crash } = await typecheck()
  if (crash !== undefined) throw new Error(crash)
  expect(repo.join('\n'), 'tsc -p tsconfig.json reported').toBe('')
  const others = hiddenBy('repo', errors)
  if (others.length === 0) return
  // The blocks' or the tables' errors stopped tsc before its later stages:
  // the repo alone, as `npm run typecheck` runs it (a second run only when
  // something already fails).
  const alone = await runTsc(['-p', 'tsconfig.json'])
  const aloneCrash = tscCrash(alone, tscDiagnostics(alone.output))
  if (aloneCrash !== undefined) throw new Error(aloneCrash)
  expect(
    alone.output.trimEnd(),
    `tsc -p tsconfig.json reported (run alone: the errors in ${others.map((o) => GROUP_NAMES[o]).join(' and ')} stopped the shared run early)`,
  ).toBe('')
})

it('README code blocks type-check against the current packages', { timeout: 300_000 }, async () => {
  const { snippets, blocks, readmeError, errors, crash } = await typecheck()
  if (crash !== undefined) throw new Error(crash)
  if (readmeError !== undefined) throw readmeError
  expect(blocks).toBeGreaterThan(0)
  expect(snippets, `checked ${blocks} blocks`).toEqual([])
  expectNotHidden('blocks', errors)
})

it('every option an options table lists is a key of the options its function takes', {
  timeout: 300_000,
}, async () => {
  const { tables, options, tablesError, errors, crash } = await typecheck()
  if (crash !== undefined) throw new Error(crash)
  if (tablesError !== undefined) throw tablesError
  expect(options).toBeGreaterThan(50)
  expect(tables, `checked ${options} options`).toEqual([])
  expectNotHidden('tables', errors)
})
