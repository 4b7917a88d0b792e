import { beforeAll, expect, it, onTestFinished } from 'vitest'
import { main } from '../src/index.js'
import { useGatewayConfig } from './support/gatewayConfig.js'
import { expectNothingLeftWhenStdoutThrows } from './support/stdoutThrows.js'

// `main(['gateway', …], io)` wrote its listening line to io.stdout and its
// errors to io.stderr, but the gateway's own JSON log lines (each request,
// the shutdown record) went to the process's fd 2, past the io the caller
// gave: a caller capturing or forwarding the command's output got none of
// its logs. They go to io.stderr, as the command's other stderr lines do.

beforeAll(async () => {
  await import('@hourglass/gateway')
})

const writeConfig = useGatewayConfig()

it('main(["gateway", …], io): the gateway log lines reach io.stderr', async () => {
  const config = writeConfig()
  // The command's stop handlers, called directly: a SIGTERM emitted on the
  // process would reach the test runner's own handlers too.
  const before = new Set(process.listeners('SIGTERM'))
  const stopHandlers = () => process.listeners('SIGTERM').filter((l) => !before.has(l))
  const stop = () => {
    for (const handler of stopHandlers()) (handler as (s: NodeJS.Signals) => void)('SIGTERM')
  }
  let stdout = ''
  let stderr = ''
  let listening: (url: string) => void = () => {}
  const up = new Promise<string>((resolve) => {
    listening = resolve
  })
  const run = main(['gateway', '--config', config, '--port', '0'], {
    stdout: (text) => {
      stdout += text
      const url = /listening on (\S+)/.exec(text)?.[1]
      if (url !== undefined) listening(url)
    },
    stderr: (text) => {
      stderr += text
    },
    stderrIsTTY: false,
  })
  // Whatever the outcome, the gateway is stopped: nothing left listening.
  onTestFinished(async () => {
    stop()
    await run
  })
  const url = await Promise.race([
    up,
    run.then((code) => {
      throw new Error(`main resolved ${code} before listening: ${stderr}`)
    }),
  ])
  const models = await fetch(`${url}/models`)
  expect(models.status).toBe(200)
  await models.arrayBuffer()
  stop()
  expect(await run).toBe(0)
  const events = stderr
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line).event)
  expect(events).toEqual(['request', 'draining', 'shutdown'])
  expect(stdout).toBe(`hourglass gateway listening on ${url}\n`)
})

// An io.stdout that throws on the listening line (a caller writing to a
// stream it has closed, an EPIPE) failed the command with exit 1 and left
// the gateway listening — nobody had a handle to close it — and its SIGINT,
// SIGTERM and SIGHUP listeners on the caller's process, which a SIGTERM no
// longer ended. The command closes what it started before it fails.
it('main(["gateway", …], io): an io.stdout that throws on the listening line leaves nothing running', async () => {
  await expectNothingLeftWhenStdoutThrows([
    'gateway',
    '--config',
    writeConfig(),
    '--port',
    '0',
    '--log-level',
    'error',
  ])
})
