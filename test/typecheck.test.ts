import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
const tsc = createRequire(import.meta.url).resolve('typescript/lib/tsc.js')

// `npm run typecheck`, run by `npm test` as the first file of the `parallel`
// project (vitest.config.ts starts it first): `tsc` works alone on one core
// for ~20 s, and beside the parallel files it uses CPU they leave idle,
// where as a step before Vitest it held everything else back.
it('is what npm run typecheck runs, and npm test runs it here, not again before Vitest', () => {
  const { scripts } = JSON.parse(readFileSync(`${root}package.json`, 'utf8'))
  expect(scripts.typecheck).toBe('tsc -p tsconfig.json')
  expect(scripts.test).toBe('turbo run build:emit lint --output-logs=errors-only && vitest run')
})

it('npm run typecheck passes: tsc -p tsconfig.json over every source, test, example and benchmark, declaration emit included', {
  timeout: 300_000,
}, async () => {
  const child = spawn(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  expect(out.trimEnd(), 'tsc -p tsconfig.json reported').toBe('')
  expect(code).toBe(0)
})
