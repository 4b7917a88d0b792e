import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, expect, it, vi } from 'vitest'
import { main } from '../src/main.js'
import { useGatewayConfig } from './support/gatewayConfig.js'

// main(['gateway', …]) in a caller's process (README "Programmatic use"):
// a second SIGINT during the drain called process.exit(130) on the caller's
// process, past its own handlers and before main() resolved — where
// `demo --serve` hands the next signal back to the caller ("In a caller's
// process (main() as a library) the next signal is the caller's") and
// probe and a demo run leave the caller's signals alone. Not the binary:
// this worker never held the startup signals.

const writeConfig = useGatewayConfig()
let fake: FakeProvider | undefined
afterEach(async () => {
  vi.restoreAllMocks()
  await fake?.close()
  fake = undefined
})

it('a second SIGINT or SIGHUP during the drain leaves the caller process alone; main resolves 3', async () => {
  fake = await startFakeProvider({ dialect: 'openai', reply: reply.hang() })
  const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never)
  const { writeFileSync } = await import('node:fs')
  const config = writeConfig()
  writeFileSync(
    config,
    JSON.stringify({
      providers: { fake: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
      models: { small: { fallback: [{ provider: 'fake', model: 'm' }] } },
    }),
  )
  let listening: (url: string) => void = () => {}
  const url = new Promise<string>((resolve) => (listening = resolve))
  const ran = main(['gateway', '--config', config, '--port', '0', '--drain-timeout-ms', '300'], {
    stdout: (text) => {
      const match = /listening on (\S+)\/v1/.exec(text)
      if (match?.[1]) listening(match[1])
    },
    stderr: () => {},
    stderrIsTTY: false,
  })
  const inFlight = fetch(`${await url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'small', messages: [{ role: 'user', content: 'hi' }] }),
  }).then(
    (res) => res.status,
    () => 'failed',
  )
  await fake.waitForRequests(1)
  // Both while the caller's own listener is on, so Node's default action never runs here.
  const callers = () => {}
  process.on('SIGINT', callers)
  try {
    process.emit('SIGINT', 'SIGINT')
    // The next SIGINT or SIGTERM is the caller's: only its own listener is left.
    expect(process.listeners('SIGINT')).toEqual([callers])
    expect(process.listenerCount('SIGTERM')).toBe(0)
    process.emit('SIGINT', 'SIGINT')
    // A terminal closed sends SIGHUP twice: with no listener of the caller's,
    // the second took Node's default action and killed the caller mid-drain
    // (a real signal; emitted here, it reaches the listeners alone). The
    // gateway keeps one, ignoring it, until its drain is over.
    expect(process.listenerCount('SIGHUP')).toBeGreaterThan(0)
    process.emit('SIGHUP', 'SIGHUP')
    process.emit('SIGHUP', 'SIGHUP')
    expect(exit).not.toHaveBeenCalled()
    expect(await ran).toBe(3)
    expect(await inFlight).toBe(503)
  } finally {
    process.off('SIGINT', callers)
  }
})
