import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { request } from 'undici'
import { afterEach, expect, it } from 'vitest'

// The built gateway, as in drainOnSignals.test.ts: a child process, since the signal ends it.
const repoRoot = fileURLToPath(new URL('../../../..', import.meta.url))
const gatewayDist = fileURLToPath(new URL('../../dist/index.js', import.meta.url))

const ANSWER = JSON.stringify({
  id: 'chatcmpl-late',
  object: 'chat.completion',
  created: 0,
  model: 'slow-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'late' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
})

let upstream: FaultServer | undefined
let child: ChildProcess | undefined
afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  child = undefined
  await upstream?.close()
  upstream = undefined
})

/**
 * A process that begins the drain itself (a Kubernetes preStop hook calling
 * an endpoint of its own that runs `close()`), then gets its supervisor's
 * SIGTERM while draining: the signal waits for that drain, as a first signal
 * does, then ends the process. `close()` let go of the gateway's signal
 * listeners as it began, so the SIGTERM met none and Node's default killed
 * the process at once: the request in flight cut, no shutdown line.
 */
it('a SIGTERM during a drain close() began lets that drain finish, then ends the process', async () => {
  if (!existsSync(gatewayDist)) {
    throw new Error(`${gatewayDist} does not exist: run \`npm run build\` first`)
  }
  let arrived = () => {}
  const upstreamHasIt = new Promise<void>((resolve) => {
    arrived = resolve
  })
  // Long enough that the signal comes during the drain on a loaded machine.
  // Were it to come after, the process (kept alive by its stdin) would end
  // by that signal as well, the answer given: late, this test cannot fail.
  upstream = await faultServer(() => {
    arrived()
    return {
      type: 'respond',
      delayMs: 1500,
      headers: { 'content-type': 'application/json' },
      body: ANSWER,
    }
  })
  const config = {
    providers: { slow: { dialect: 'openai', baseURL: `${upstream.url}/v1`, apiKeys: ['k'] } },
    models: { m: { fallback: [{ provider: 'slow', model: 'slow-model' }] } },
    policy: { maxAttempts: 1 },
  }
  const script = [
    "import { startGateway } from '@hourglass/gateway'",
    `const running = await startGateway({ config: ${JSON.stringify(config)}, port: 0 })`,
    "process.stdout.write(running.url + '\\n')",
    // The process's own way to begin the drain (a preStop hook's endpoint, say).
    "process.stdin.once('data', () => { void running.close() })",
  ].join('\n')
  const started = spawn(process.execPath, ['--input-type=module', '--eval', script], {
    cwd: repoRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  child = started
  let stderr = ''
  let onStderr = () => {}
  started.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
    onStderr()
  })
  const exited = once(started, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  const [line] = (await once(started.stdout.setEncoding('utf8'), 'data')) as [string]
  const url = line.trim()

  const answer = request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  }).then(
    async (res) => ({ status: res.statusCode, body: await res.body.text() }),
    (error: unknown) => ({ status: 0, body: String(error) }),
  )
  await upstreamHasIt
  started.stdin.write('close\n')
  // The drain has begun (its line is written as close() is called).
  await new Promise<void>((resolve) => {
    onStderr = () => {
      if (stderr.includes('"event":"draining"')) resolve()
    }
    onStderr()
  })
  started.kill('SIGTERM')

  const res = await answer
  expect(res.status).toBe(200)
  expect(res.body).toContain('late')
  const [code, killedBy] = await exited
  // Drained, then the signal did what it does to a process with no handler.
  expect({ code, killedBy }).toEqual({ code: null, killedBy: 'SIGTERM' })
  expect(stderr).toMatch(/"event":"shutdown".*"msg":"shutdown: drained 1 in \d+ ms"/)
}, 30_000)
