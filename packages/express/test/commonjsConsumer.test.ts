import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { afterEach, expect, it } from 'vitest'

// An Express 4 app is most often CommonJS, and its tsconfig the classic one:
// `"module": "commonjs"`, whose resolution (node10) reads a package's
// `types` and `main`, never `exports`. Node ≥ 20.19 require()s this ES
// module; with `exports` alone TypeScript found no types for it (TS2307),
// nor for `req.deadline` — core's, which the express types import, the same.
// Against the built declarations, as a consumer gets them.
const repo = fileURLToPath(new URL('../../../', import.meta.url))
let dir: string | undefined

afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

it('type-checks in a CommonJS consumer (module commonjs, classic node10 resolution): the package, core, req.deadline', () => {
  dir = mkdtempSync(path.join(tmpdir(), 'hourglass-cjs-consumer-'))
  mkdirSync(path.join(dir, 'node_modules', '@hourglass'), { recursive: true })
  for (const name of ['express', 'core']) {
    symlinkSync(
      path.join(repo, 'packages', name),
      path.join(dir, 'node_modules', '@hourglass', name),
      'dir',
    )
  }
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'cjs-consumer' }))
  const app = path.join(dir, 'app.ts')
  writeFileSync(
    app,
    [
      "import { deadline, deadlineErrors } from '@hourglass/express'",
      "import { DeadlineExceededError } from '@hourglass/core'",
      "import type { Request } from 'express'",
      'export const middleware = deadline({ defaultMs: 2000 })',
      'export const errors = deadlineErrors()',
      'export const left = (req: Request): number => req.deadline.remaining()',
      'export const isDeadline = (e: unknown): boolean => e instanceof DeadlineExceededError',
    ].join('\n'),
  )
  const program = ts.createProgram([app], {
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    esModuleInterop: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
    typeRoots: [path.join(repo, 'node_modules', '@types')],
    baseUrl: dir,
    paths: { express: [path.join(repo, 'node_modules', '@types', 'express', 'index.d.ts')] },
  })
  const messages = ts
    .getPreEmitDiagnostics(program)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n')[0])
  expect(messages).toEqual([])
})
