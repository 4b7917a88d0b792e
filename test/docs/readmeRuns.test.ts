import { readFileSync } from 'node:fs'
import * as hourglassCore from '@hourglass/core'
import * as hourglassExpress from '@hourglass/express'
import * as hourglassFetch from '@hourglass/fetch'
import * as hourglassLlm from '@hourglass/llm'
import * as express from 'express'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { tsBlocks } from '../support/tsBlocks.js'

// test/typecheck.test.ts type-checks the root README's ```ts blocks; a type
// says nothing of the values an option refuses when it is given (a negative
// or zero limit, a malformed baseURL, a plan's slices): those throw when the
// pasted block first runs. So each block runs here, as far as it goes
// without a network: everything it builds at the top level (clients,
// middleware, routes) is built, nothing is listened on or sent. The names a
// block's preamble declares (the reader's own: `baseURL`, `apiKey`, …) get
// the plausible values below; the packages it imports are the ones this file
// imports (the sources, through the "@hourglass/source" condition).

const MODULES: Record<string, object> = {
  express,
  '@hourglass/core': hourglassCore,
  '@hourglass/express': hourglassExpress,
  '@hourglass/fetch': hourglassFetch,
  '@hourglass/llm': hourglassLlm,
}

/** What the reader supplies for the names a preamble declares. */
const READER_VALUES: Record<string, unknown> = {
  baseURL: 'https://api.openai.com/v1',
  apiKey: 'sk-example',
  anthropicKey: 'sk-ant-example',
  buildPrompt: (body: unknown) => [{ role: 'user', content: JSON.stringify(body) }],
}

interface RootBlock {
  firstLine: number
  preamble: string
  code: string
}

/** The root README's ```ts blocks not marked `snippet: skip`, each with its preamble. */
function rootBlocks(): RootBlock[] {
  const lines = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').split(/\r?\n/)
  return tsBlocks(lines).flatMap(({ fence, firstLine, code }) => {
    const before = (lines[fence - 1] ?? '').trim()
    if (/^<!--\s*snippet\s*:\s*skip\b/.test(before)) return []
    const preamble = /^<!--\s*snippet-preamble\s*:\s*([\s\S]*?)\s*-->$/.exec(before)?.[1] ?? ''
    return [{ firstLine, preamble, code }]
  })
}

/** The names a preamble declares with `declare const/let/function`. */
function declaredNames(preamble: string): string[] {
  const sf = ts.createSourceFile('preamble.ts', preamble, ts.ScriptTarget.ES2022)
  const names: string[] = []
  for (const statement of sf.statements) {
    const declared = ts.canHaveModifiers(statement)
      ? ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.DeclareKeyword)
      : false
    if (!declared) continue
    if (ts.isVariableStatement(statement)) {
      for (const d of statement.declarationList.declarations) names.push(d.name.getText(sf))
    } else if (ts.isFunctionDeclaration(statement) && statement.name) {
      names.push(statement.name.text)
    }
  }
  return names
}

describe('root README: the ```ts blocks run', () => {
  const blocks = rootBlocks()

  it('finds them', () => {
    expect(blocks.length).toBeGreaterThan(0)
  })

  it.each(blocks.map((b) => [b.firstLine, b] as const))(
    'README.md:%i builds what it builds without a throw',
    (_line, block) => {
      const names = declaredNames(block.preamble)
      expect(
        names.filter((name) => !(name in READER_VALUES)),
        'declared names with no value in READER_VALUES',
      ).toEqual([])
      const { outputText } = ts.transpileModule(`${block.preamble}\n${block.code}`, {
        compilerOptions: {
          module: ts.ModuleKind.CommonJS,
          target: ts.ScriptTarget.ES2022,
          esModuleInterop: true,
        },
      })
      const require = (specifier: string): object => {
        const namespace = MODULES[specifier]
        if (namespace === undefined) {
          throw new Error(`the block imports ${specifier}: add it to MODULES in this file`)
        }
        return { __esModule: true, ...namespace }
      }
      const run = new Function('require', 'exports', ...names, outputText) as (
        ...args: unknown[]
      ) => void
      expect(() => run(require, {}, ...names.map((name) => READER_VALUES[name]))).not.toThrow()
    },
  )
})
