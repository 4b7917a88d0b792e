import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// Every row of a package README's errors tables names an exported class (or
// one the README says is exported as a type only), exported guards (core's
// where it says so) and a `code` the package's or core's source defines: a
// reader writes `hasErrorCode(e, 'X')` or `isX(e)` from these tables. Read
// from the sources' export lists, not by importing the packages (fast). The
// options tables are checked in test/typecheck.test.ts (optionTables.ts).

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

/** Every `.ts` file under `dir`, read and joined. */
function sourceOf(dir: string): string {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => readFileSync(path.join(dir, f), 'utf8'))
    .join('\n')
}

/** What a module exports, by name: `value`, or `type` for a type-only export (follows `export *`). */
function exportsOf(file: string): Map<string, 'value' | 'type'> {
  const found = new Map<string, 'value' | 'type'>()
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest)
  for (const st of sf.statements) {
    if (ts.isExportDeclaration(st)) {
      if (!st.exportClause && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier)) {
        const base = path.join(path.dirname(file), st.moduleSpecifier.text.replace(/\.js$/, ''))
        const target = [`${base}.ts`, path.join(base, 'index.ts')].find((f) => existsSync(f))
        if (target) for (const [name, kind] of exportsOf(target)) found.set(name, kind)
      } else if (st.exportClause && ts.isNamedExports(st.exportClause)) {
        for (const el of st.exportClause.elements) {
          found.set(el.name.text, st.isTypeOnly || el.isTypeOnly ? 'type' : 'value')
        }
      }
    } else if (
      (ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st)) &&
      st.name &&
      st.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)
    ) {
      found.set(st.name.text, 'value')
    }
  }
  return found
}

/** The tables of the `## Errors…` sections of a package's README, as rows of trimmed cells (header first). */
function errorTables(text: string): string[][][] {
  const tables: string[][][] = []
  let inErrors = false
  let table: string[][] | undefined
  for (const line of text.split(/\r?\n/)) {
    if (/^## /.test(line)) inErrors = /^## Errors/.test(line)
    if (inErrors && line.startsWith('|')) {
      if (/^\|\s*-/.test(line)) continue
      if (!table) {
        table = []
        tables.push(table)
      }
      table.push(
        line
          .split(/(?<!\\)\|/)
          .slice(1, -1)
          .map((c) => c.replace(/\\\|/g, '|').trim()),
      )
    } else table = undefined
  }
  return tables
}

describe('README errors tables', () => {
  const packages = readdirSync(path.join(repoRoot, 'packages')).sort()

  it.each(packages)(
    '%s: every class, guard and code a table names is exported or defined',
    (name) => {
      const dir = path.join(repoRoot, 'packages', name)
      const exports = exportsOf(path.join(dir, 'src', 'index.ts'))
      const coreExports = exportsOf(path.join(repoRoot, 'packages', 'core', 'src', 'index.ts'))
      const src = sourceOf(path.join(dir, 'src'))
      const coreSrc = sourceOf(path.join(repoRoot, 'packages', 'core', 'src'))
      const readme = readFileSync(path.join(dir, 'README.md'), 'utf8')
      const defined = (code: string) =>
        [src, coreSrc].some((s) => s.includes(`'${code}'`) || s.includes(`"${code}"`))
      const problems: string[] = []
      for (const [header = [], ...rows] of errorTables(readme)) {
        const codeColumn = header.indexOf('`code`')
        for (const row of rows) {
          const first = row[0] ?? ''
          const fromCore = /core's/.test(first)
          const cls = /^`([A-Z]\w*)`/.exec(first)?.[1]
          if (header[0] === 'class' && cls && !fromCore && !(cls in globalThis)) {
            // A class exported as a type only is fine where the README says so.
            const kind = exports.get(cls)
            if (kind === undefined) problems.push(`class ${cls} is not exported`)
            else if (kind === 'type' && !/types only/.test(readme)) {
              problems.push(
                `class ${cls} is exported as a type only, and the README does not say so`,
              )
            }
          }
          // Backticked names in parentheses are fields (`param`), not codes.
          const codes = (row[codeColumn] ?? '').replace(/\([^)]*\)/g, '')
          for (const m of codes.matchAll(/`([A-Za-z_]+)`/g)) {
            if (!defined(m[1]!)) problems.push(`code ${m[1]} (${first}) is in no source`)
          }
          if (header[2] === 'guard') {
            for (const m of (row[2] ?? '').matchAll(/`(\w+)[(`]/g)) {
              const guard = m[1]!
              const from =
                /core's/.test(row[2] ?? '') && !exports.has(guard) ? coreExports : exports
              if (from.get(guard) !== 'value') problems.push(`guard ${guard} is not exported`)
            }
          }
        }
      }
      expect(problems).toEqual([])
    },
  )
})
