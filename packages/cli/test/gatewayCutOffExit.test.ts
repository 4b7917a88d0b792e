import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { assertBuilt, hourglassBin, repoRoot } from '../../../test/cli/runNode.js'

// A SIGTERM whose drain timed out and cancelled a request in flight exited
// 0, as a clean stop does: only a `warn` log line said "1 cut off", and a
// supervisor or a deploy script reading the exit code saw nothing wrong.
// It exits 3 now (the CLI README's exit codes). Spawns the built CLI.

let dir: string | undefined
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = undefined
})

it('a SIGTERM whose drain cuts a request off exits 3, not 0', async () => {
  assertBuilt()
  fake = await startFakeProvider({ dialect: 'openai', reply: reply.hang() })
  dir = mkdtempSync(join(tmpdir(), 'hourglass-cli-'))
  const config = join(dir, 'gateway.json')
  writeFileSync(
    config,
    JSON.stringify({
      providers: { fake: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
      models: { small: { fallback: [{ provider: 'fake', model: 'fake-model' }] } },
    }),
  )
  const child = spawn(
    process.execPath,
    [hourglassBin, 'gateway', '--config', config, '--port', '0', '--drain-timeout-ms', '0'],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const exited = once(child, 'exit')
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const match = /listening on (http:\/\/\S+)\/v1/.exec(out)
      if (match?.[1]) resolve(match[1])
    })
    child.once('exit', (code) => reject(new Error(`exited ${code} before listening: ${stderr}`)))
  })
  // One request held by the provider: the drain (0 ms) cancels it.
  const inFlight = fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'small', messages: [{ role: 'user', content: 'hi' }] }),
  }).then(
    (res) => res.status,
    () => 'cut',
  )
  await fake.waitForRequests(1)
  child.kill('SIGTERM')
  const [code, signal] = await exited
  expect(stderr).toMatch(/"msg":"shutdown: drained 0 in \d+ ms, 1 cut off"/)
  expect({ code, signal }).toEqual({ code: 3, signal: null })
  expect(await inFlight).toBe(503)
})
