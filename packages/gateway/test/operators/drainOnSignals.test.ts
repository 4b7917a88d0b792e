import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { startGateway } from '@hourglass/gateway'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { request } from 'undici'
import { afterEach, describe, expect, it, vi } from 'vitest'

// The built gateway (npm test builds first), as a user runs it: a child that
// transpiled the TypeScript sources on load took 15 s to start on a loaded
// 2-core machine.
const repoRoot = fileURLToPath(new URL('../../../..', import.meta.url))
const gatewayDist = fileURLToPath(new URL('../../dist/index.js', import.meta.url))
const nodeArgs: string[] = []
function assertBuilt(): void {
  if (!existsSync(gatewayDist))
    throw new Error(`${gatewayDist} does not exist: run \`npm run build\` first`)
}

const ANSWER = JSON.stringify({
  id: 'chatcmpl-drain',
  object: 'chat.completion',
  created: 0,
  model: 'slow-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'late' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
})

const config = (upstreamUrl: string) => ({
  providers: { slow: { dialect: 'openai', baseURL: `${upstreamUrl}/v1`, apiKeys: ['k'] } },
  models: { m: { fallback: [{ provider: 'slow', model: 'slow-model' }] } },
  policy: { maxAttempts: 1 },
})

const signalListeners = () => process.listenerCount('SIGTERM') + process.listenerCount('SIGINT')

/**
 * The README's standalone start, two lines and no handler of its own: a
 * supervisor's SIGTERM (every deploy) used to end the process at once and cut
 * the requests in flight; only the CLI drained.
 */
describe('startGateway drains on SIGTERM by default', () => {
  let upstream: FaultServer | undefined
  let child: ChildProcess | undefined
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    child = undefined
    await upstream?.close()
    upstream = undefined
  })

  it('the README snippet in a process of its own: the request in flight is answered 200, one shutdown line, then the signal ends the process', async () => {
    let arrived = () => {}
    const upstreamHasIt = new Promise<void>((resolve) => {
      arrived = resolve
    })
    upstream = await faultServer(() => {
      arrived()
      // Long enough that an undrained exit would cut it; well inside the 10 s drain.
      return {
        type: 'respond',
        delayMs: 600,
        headers: { 'content-type': 'application/json' },
        body: ANSWER,
      }
    })
    const script = [
      "import { startGateway } from '@hourglass/gateway'",
      `const { url } = await startGateway({ config: ${JSON.stringify(config(upstream.url))}, port: 0 })`,
      "process.stdout.write(url + '\\n')",
    ].join('\n')
    assertBuilt()
    const started = spawn(
      process.execPath,
      [...nodeArgs, '--input-type=module', '--eval', script],
      {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    child = started
    let stderr = ''
    started.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const exited = once(started, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
    const [line] = (await once(started.stdout.setEncoding('utf8'), 'data')) as [string]
    const url = line.trim()

    const answer = request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    await upstreamHasIt
    started.kill('SIGTERM')

    const res = await answer
    expect(res.statusCode).toBe(200)
    expect(
      ((await res.body.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]
        ?.message.content,
    ).toBe('late')
    const [code, killedBy] = await exited
    // Drained, then the signal did what it does to a process with no handler.
    expect({ code, killedBy }).toEqual({ code: null, killedBy: 'SIGTERM' })
    expect(stderr).toMatch(/"event":"shutdown".*"msg":"shutdown: drained 1 in \d+ ms"/)
  }, 30_000)

  /**
   * A process that begins the drain itself (a Kubernetes preStop hook calling
   * an endpoint of its own that runs `close()`), then gets its supervisor's
   * SIGTERM while draining: the signal waits for that drain, as a first
   * signal does, then ends the process. `close()` let go of the gateway's
   * signal listeners as it began, so the SIGTERM met none and Node's default
   * killed the process at once: the request in flight cut, no shutdown line.
   */
  it('a SIGTERM during a drain close() began lets that drain finish, then ends the process', async () => {
    let arrived = () => {}
    const upstreamHasIt = new Promise<void>((resolve) => {
      arrived = resolve
    })
    // Long enough that the signal comes during the drain on a loaded machine.
    // Were it to come after, the process (kept alive by its stdin) would end
    // by that signal as well, the answer given: late, this case cannot fail.
    upstream = await faultServer(() => {
      arrived()
      return {
        type: 'respond',
        delayMs: 1500,
        headers: { 'content-type': 'application/json' },
        body: ANSWER,
      }
    })
    const script = [
      "import { startGateway } from '@hourglass/gateway'",
      `const running = await startGateway({ config: ${JSON.stringify(config(upstream.url))}, port: 0 })`,
      "process.stdout.write(running.url + '\\n')",
      // The process's own way to begin the drain (a preStop hook's endpoint, say).
      "process.stdin.once('data', () => { void running.close() })",
    ].join('\n')
    assertBuilt()
    const started = spawn(
      process.execPath,
      [...nodeArgs, '--input-type=module', '--eval', script],
      {
        cwd: repoRoot,
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    )
    child = started
    let stderr = ''
    let onStderr = () => {}
    started.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
      onStderr()
    })
    const exited = once(started, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
    const [line] = (await once(started.stdout.setEncoding('utf8'), 'data')) as [string]
    const answer = request(`${line.trim()}/v1/chat/completions`, {
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
    expect({ code, killedBy }).toEqual({ code: null, killedBy: 'SIGTERM' })
    expect(stderr).toMatch(/"event":"shutdown".*"msg":"shutdown: drained 1 in \d+ ms"/)
  }, 30_000)

  it('listens only while running: close() removes its listeners; drainOnSignals: false adds none', async () => {
    upstream = await faultServer(() => ({ type: 'respond', body: ANSWER }))
    const before = signalListeners()
    const running = await startGateway({ config: config(upstream.url), port: 0, logger: () => {} })
    // Nobody signalled it while it started: nothing stops its "listening" line.
    expect(running.signalledWhileStarting).toBeUndefined()
    expect(signalListeners()).toBe(before + 2)
    await running.close()
    expect(signalListeners()).toBe(before)

    const quiet = await startGateway({
      config: config(upstream.url),
      port: 0,
      logger: () => {},
      drainOnSignals: false,
    })
    expect(signalListeners()).toBe(before)
    await quiet.close()
  })

  it.each([
    ['after', 'SIGTERM'],
    ['before', 'SIGTERM'],
    ['before', 'SIGHUP'],
  ] as const)(
    'a process with its own handler keeps the signal, one added with process.once (%s startGateway) too: drained or left alone, never raised again (%s)',
    async (when, signal) => {
      // A library user's shutdown code (`process.once('SIGTERM', …)`, then a
      // database to close) saw the process killed by the re-raised SIGTERM
      // (143) once the drain ended: the once-handler had removed itself by
      // then, and the count taken after the drain read "nobody listens" — and
      // one added before startGateway had removed itself before our listener
      // ran (the usual order: shutdown code first, then the server).
      upstream = await faultServer(() => ({ type: 'respond', body: ANSWER }))
      let mine = 0
      if (when === 'before') process.once(signal, () => mine++)
      const running = await startGateway({
        config: config(upstream.url),
        port: 0,
        logger: () => {},
      })
      const kill = vi.spyOn(process, 'kill').mockImplementation(() => true)
      if (when === 'after') process.once(signal, () => mine++)
      try {
        process.emit(signal, signal)
        const report = await running.close()
        // The re-raise, when there is one, follows the drain's end.
        await new Promise((resolve) => setImmediate(resolve))
        expect(report.cutOff).toBe(0)
        expect(mine).toBe(1)
        expect(kill.mock.calls).toEqual([])
      } finally {
        kill.mockRestore()
      }
    },
  )

  it('a listener that ends the process when it is the last one (signal-exit, loaded by execa and ora) still sees ours during the signal: no kill before the drain', async () => {
    upstream = await faultServer(() => ({ type: 'respond', body: ANSWER }))
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true)
    // signal-exit v4's listener: it re-raises when it is the only one left.
    const signalExit = () => {
      if (process.listeners('SIGTERM').length === 1) {
        process.off('SIGTERM', signalExit)
        process.kill(process.pid, 'SIGTERM')
      }
    }
    process.on('SIGTERM', signalExit)
    try {
      const running = await startGateway({
        config: config(upstream.url),
        port: 0,
        logger: () => {},
      })
      process.emit('SIGTERM', 'SIGTERM')
      expect(kill.mock.calls).toEqual([])
      await running.close()
    } finally {
      process.off('SIGTERM', signalExit)
      kill.mockRestore()
    }
  })

  it('SIGHUP (a terminal closed, a process manager) drains as SIGTERM does, then ends the process as the signal says', async () => {
    upstream = await faultServer(() => ({ type: 'respond', body: ANSWER }))
    const lines: string[] = []
    const running = await startGateway({
      config: config(upstream.url),
      port: 0,
      logger: (entry) => lines.push(JSON.stringify(entry)),
    })
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true)
    try {
      process.emit('SIGHUP', 'SIGHUP')
      // The drain the signal began (close() resolves the same report), then the re-raise.
      await running.close()
      await new Promise((resolve) => setImmediate(resolve))
      expect(kill.mock.calls).toEqual([[process.pid, 'SIGHUP']])
      expect(lines.filter((line) => line.includes('"shutdown"'))).toHaveLength(1)
    } finally {
      kill.mockRestore()
    }
  })

  it('a SIGHUP the process handles itself (a reload, a log reopen) is its own: the gateway goes on serving', async () => {
    upstream = await faultServer(() => ({ type: 'respond', body: ANSWER }))
    const running = await startGateway({ config: config(upstream.url), port: 0, logger: () => {} })
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true)
    let reloads = 0
    const reload = () => reloads++
    process.on('SIGHUP', reload)
    try {
      process.emit('SIGHUP', 'SIGHUP')
      expect(reloads).toBe(1)
      expect((await fetch(`${running.url}/readyz`)).status).toBe(200)
      expect(kill.mock.calls).toEqual([])
    } finally {
      process.off('SIGHUP', reload)
      kill.mockRestore()
      await running.close()
    }
  })

  it('a second signal during the drain ends the process at once, after a shutdown line that says so (it died with none)', async () => {
    let arrived = () => {}
    const upstreamHasIt = new Promise<void>((resolve) => {
      arrived = resolve
    })
    upstream = await faultServer(() => {
      arrived()
      return { type: 'hang' }
    })
    const lines: Array<Record<string, unknown>> = []
    const running = await startGateway({
      config: config(upstream.url),
      port: 0,
      logger: (record) => lines.push(record as Record<string, unknown>),
    })
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true)
    const leaving = new AbortController()
    try {
      // In flight: the drain waits for it (up to 10 s).
      const inFlight = fetch(`${running.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
        signal: leaving.signal,
      }).catch(() => 'left')
      await upstreamHasIt
      process.emit('SIGTERM', 'SIGTERM')
      await expect.poll(() => lines.some((l) => l['event'] === 'draining')).toBe(true)
      // Ctrl-C during it: raised with none of our listeners left (its default ends the process).
      process.emit('SIGINT', 'SIGINT')
      expect(kill.mock.calls[0]).toEqual([process.pid, 'SIGINT'])
      expect(process.listenerCount('SIGINT')).toBe(0)
      expect(lines.filter((l) => l['event'] === 'shutdown')).toEqual([
        expect.objectContaining({
          level: 'error',
          forced: true,
          signal: 'SIGINT',
          msg: 'SIGINT again: exiting without waiting for the drain',
        }),
      ])
      leaving.abort()
      expect(await inFlight).toBe('left')
      await running.close()
      // The drain's own re-raise (the process would be gone by then) follows its end.
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      kill.mockRestore()
    }
  })

  it('refuses a drainOnSignals that is not a boolean, before anything starts', async () => {
    const before = signalListeners()
    const error = await startGateway({
      config: config('http://127.0.0.1:9'),
      port: 0,
      drainOnSignals: 'no' as unknown as boolean,
    }).catch((e: unknown) => e)
    expect((error as { code?: unknown }).code).toBe('GATEWAY_OPTION_INVALID')
    expect(String(error)).toMatch(/drainOnSignals/)
    expect(signalListeners()).toBe(before)
  })
})
