import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

// The options tables a reader copies names from (see typecheck.test.ts,
// which type-checks the module this builds in the program of `npm run
// typecheck`, with the READMEs' code blocks): every option a table lists must
// be a key of the options type of the function its section documents — a renamed or removed
// option would otherwise be a TypeError "unknown option" at the user's first
// call, or a compile error in their code.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

export interface OptionTable {
  doc: string
  /** The heading line the table sits under (exact). */
  heading: string
  /** A TypeScript type expression for the options object. */
  type: string
}

const pkg = (name: string) => `typeof import('@hourglass/${name}')`
export const TABLES: OptionTable[] = [
  {
    doc: 'packages/express/README.md',
    heading: '## `deadline(options?)`',
    type: `Parameters<${pkg('express')}['deadline']>[0]`,
  },
  {
    doc: 'packages/fetch/README.md',
    heading: '## `createFetch(options?)` → `fetch(input, init?)`',
    type: `Parameters<${pkg('fetch')}['createFetch']>[0]`,
  },
  {
    doc: 'packages/gateway/README.md',
    heading: '## `createGateway(config, options?)` → `GatewayRouter`',
    type: `Parameters<${pkg('gateway')}['createGateway']>[1]`,
  },
  {
    doc: 'packages/grpc/README.md',
    heading: '## `deadlineServerInterceptor(options?)`',
    type: `Parameters<${pkg('grpc')}['deadlineServerInterceptor']>[0]`,
  },
  {
    doc: 'packages/grpc/README.md',
    heading: '## `deadlineInterceptor(options?)`, `withCallDeadline(deadline, callOptions?)`',
    type: `Parameters<${pkg('grpc')}['deadlineInterceptor']>[0]`,
  },
  {
    doc: 'packages/llm/README.md',
    heading: '## `callModel(options)`',
    type: `Parameters<${pkg('llm')}['callModel']>[0]`,
  },
  {
    doc: 'packages/llm/README.md',
    heading: '## Adapters',
    type: `Parameters<${pkg('llm')}['openAICompatible']>[0]`,
  },
  {
    doc: 'packages/llm/docs/admission.md',
    heading: '## Options (`new Admission(options)`)',
    type: `ConstructorParameters<${pkg('llm')}['Admission']>[0]`,
  },
  {
    doc: 'packages/llm/docs/limits.md',
    heading: '## Options',
    type: `ConstructorParameters<${pkg('llm')}['ProviderLimits']>[0]`,
  },
  {
    doc: 'packages/otel/README.md',
    heading: '### `instrumentDeadlines(options?)` → `stop()`',
    type: `Parameters<${pkg('otel')}['instrumentDeadlines']>[0]`,
  },
  {
    doc: 'packages/otel/README.md',
    heading: '## `DeadlinePropagator`',
    type: `ConstructorParameters<${pkg('otel')}['DeadlinePropagator']>[0]`,
  },
  {
    doc: 'packages/bullmq/README.md',
    heading: '## `addWithDeadline(queue, name, data, opts?)` → `Job`',
    type: `Parameters<${pkg('bullmq')}['addWithDeadline']>[3]`,
  },
  {
    doc: 'packages/bullmq/README.md',
    heading: '## `withDeadline(processor, options?)` → processor',
    type: `Parameters<${pkg('bullmq')}['withDeadline']>[1]`,
  },
  {
    doc: 'packages/testkit/docs/providers.md',
    heading: '## `startFakeProvider(options?)` → `Promise<FakeProvider>`',
    type: `Parameters<${pkg('testkit')}['startFakeProvider']>[0]`,
  },
]

/** The rows (cells, trimmed) of the first `| option |` table under `heading` in `doc`, header and rule left out. */
function tableRows(doc: string, heading: string): string[][] {
  const lines = readFileSync(path.join(repoRoot, doc), 'utf8').split(/\r?\n/)
  const start = lines.indexOf(heading)
  if (start < 0) throw new Error(`${doc}: no heading ${heading}`)
  let i = start + 1
  while (i < lines.length && !/^\|\s*option\s*\|/.test(lines[i]!)) {
    if (/^#{1,6} /.test(lines[i]!)) throw new Error(`${doc}: no options table under ${heading}`)
    i++
  }
  const rows: string[][] = []
  for (; i < lines.length && lines[i]!.startsWith('|'); i++) {
    // `\|` inside a cell is a literal bar (a union type), not a column.
    const cells = lines[i]!.split(/(?<!\\)\|/)
      .slice(1, -1)
      .map((c) => c.replace(/\\\|/g, '|').trim())
    rows.push(cells)
  }
  return rows.slice(2)
}

/** The option paths a row's first cell names: `a`, `a.b`; `cooldownMs(input)` → `cooldownMs`. */
function optionPaths(cell: string): string[] {
  return [...cell.matchAll(/`([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?:\([^`]*\))?`/g)].map(
    (m) => m[1]!,
  )
}

/**
 * A module that type-checks only if every option of every table is a key of
 * its options type, and for each `export const kN` line, the option it checks.
 */
export function optionTablesModule(): { source: string; options: string[] } {
  // Keys of every member of a union (an options type may be one), and of an
  // option's object value with `false`, `null` and `undefined` taken out.
  let source =
    'type Obj<T> = Exclude<T, false | null | undefined>\n' +
    'type Keys<T> = T extends unknown ? keyof T : never\n' +
    'type At<T, K> = T extends unknown ? (K extends keyof T ? Obj<T[K]> : never) : never\n'
  const options: string[] = []
  TABLES.forEach((table, t) => {
    source += `type O${t} = Obj<${table.type}>\n`
    const rows = tableRows(table.doc, table.heading)
    if (rows.length === 0)
      throw new Error(`${table.doc}: empty options table under ${table.heading}`)
    for (const row of rows) {
      for (const option of optionPaths(row[0] ?? '')) {
        const parts = option.split('.')
        let type = `O${t}`
        for (const part of parts.slice(0, -1)) type = `At<${type}, '${part}'>`
        source += `export const k${options.length}: Keys<${type}> = '${parts.at(-1)}'\n`
        options.push(`${table.doc} (${table.heading}): option \`${option}\``)
      }
    }
  })
  return { source, options }
}
