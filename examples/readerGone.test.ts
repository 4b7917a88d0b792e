import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { assertBuilt, repoRoot } from '../test/cli/runNode.js'

// `node examples/<name>/index.mjs | head -1`, or `less` quit early: the
// reader leaves, and each write after it fails with EPIPE. Unhandled, that
// was an 'error' event nobody heard: a stack trace and exit 1, mid-run.
const example = (name: string) => fileURLToPath(new URL(`./${name}/index.mjs`, import.meta.url))

it('grpc-chain, its reader gone before the first line (| head): runs to its end, exit 0, no EPIPE stack trace', async () => {
  assertBuilt(fileURLToPath(new URL('../packages/grpc/dist/index.js', import.meta.url)))
  const child = spawn(process.execPath, [example('grpc-chain')], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  // Gone before the example writes anything: every write fails.
  child.stdout.destroy()
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  // A guard against a hang, not a synchronisation.
  const guard = setTimeout(() => child.kill('SIGKILL'), 20_000)
  const [code, signal] = await once(child, 'close')
  clearTimeout(guard)
  expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' })
})

it('every example lets a reader leave as grpc-chain does (read, not run: each run takes seconds)', () => {
  const handler =
    "process.stdout.on('error', (error) => {\n  if (error.code !== 'EPIPE') throw error\n})"
  for (const name of [
    'three-hop',
    'otel-console',
    'gateway-openai',
    'grpc-chain',
    'bullmq-queue',
    'one-trace',
  ]) {
    expect(readFileSync(example(name), 'utf8'), name).toContain(handler)
  }
})
