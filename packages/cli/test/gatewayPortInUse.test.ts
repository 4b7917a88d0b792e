import { createServer, type Server } from 'node:net'
import { afterEach, expect, it, vi } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'
import { useGatewayConfig } from './support/gatewayConfig.js'

// A second gateway on a port already taken said `::1:8080 is already in
// use` for an IPv6 host: an address and a port no one can tell apart (nor
// paste). The address is written as a URL writes it, `[::1]:8080`.

const writeConfig = useGatewayConfig()
let taken: Server | undefined
afterEach(async () => {
  vi.unstubAllEnvs()
  await new Promise((resolve) => (taken ? taken.close(resolve) : resolve(undefined)))
  taken = undefined
})

it.for([
  ['127.0.0.1', '127.0.0.1'],
  ['::1', '[::1]'],
] as const)(
  'a port already in use on %s: one line naming %s:<port>, exit 1',
  async ([host, shown], ctx) => {
    taken = createServer()
    const listening = await new Promise<boolean>((resolve, reject) => {
      taken!.once('error', (error: NodeJS.ErrnoException) =>
        // A machine without an IPv6 loopback cannot host the case; it says nothing of the CLI.
        error.code === 'EADDRNOTAVAIL' || error.code === 'EAFNOSUPPORT'
          ? resolve(false)
          : reject(error),
      )
      taken!.listen(0, host, () => resolve(true))
    })
    if (!listening) {
      taken = undefined
      return ctx.skip()
    }
    const port = (taken.address() as { port: number }).port
    const config = writeConfig()
    const run = await runMain(['gateway', '--config', config, '--host', host, '--port', `${port}`])
    expect(run.stderr).toBe(
      `hourglass gateway: ${shown}:${port} is already in use: another process listens there (pick another --port, or 0 for any free port)\n`,
    )
    expect(run.stdout).toBe('')
    expect(run.code).toBe(1)
  },
)

// The port from PORT (a container's usual way) was refused with "pick another
// --port": a flag the operator never gave, in a deployment that sets none.
// The line names where the port came from.
it.for([
  ['--port', (port: number) => ['--port', `${port}`], undefined, 'pick another --port'],
  ['PORT', () => [], (port: number) => `${port}`, 'set PORT to another port'],
] as const)(
  'a port in use that came from %s: the line names that source',
  async ([, flags, envPort, advice]) => {
    taken = createServer()
    await new Promise<void>((resolve) => taken!.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as { port: number }).port
    const config = writeConfig()
    vi.stubEnv('PORT', envPort === undefined ? '' : envPort(port))
    const run = await runMain([
      'gateway',
      '--config',
      config,
      '--host',
      '127.0.0.1',
      ...flags(port),
    ])
    expect(run.stderr).toBe(
      `hourglass gateway: 127.0.0.1:${port} is already in use: another process listens there (${advice}, or 0 for any free port)\n`,
    )
    expect(run.code).toBe(1)
  },
)

// `--host 127.1` (inet_aton's shorthand for 127.0.0.1, which the resolver
// and listen() read so) was refused as "not a valid IPv4 address", as was
// `0` (0.0.0.0): it reaches listen now, shown here by the port it finds
// taken (the line names the host as given).
it('a dotted shorthand the resolver reads (127.1) is listened on, not refused', async () => {
  taken = createServer()
  await new Promise<void>((resolve) => taken!.listen(0, '127.0.0.1', resolve))
  const port = (taken.address() as { port: number }).port
  const config = writeConfig()
  const run = await runMain(['gateway', '--config', config, '--host', '127.1', '--port', `${port}`])
  expect(run.stderr).toBe(
    `hourglass gateway: 127.1:${port} is already in use: another process listens there (pick another --port, or 0 for any free port)\n`,
  )
  expect(run.code).toBe(1)
})

// HOST=" 127.0.0.1 " was trimmed, the same value in --host refused as no
// address: a command substitution often ends in a blank.
it('blanks around --host are ignored, as around HOST', async () => {
  taken = createServer()
  await new Promise<void>((resolve) => taken!.listen(0, '127.0.0.1', resolve))
  const port = (taken.address() as { port: number }).port
  const run = await runMain([
    'gateway',
    '--config',
    writeConfig(),
    '--host',
    '127.0.0.1 ',
    '--port',
    `${port}`,
  ])
  expect(run.stderr).toBe(
    `hourglass gateway: 127.0.0.1:${port} is already in use: another process listens there (pick another --port, or 0 for any free port)\n`,
  )
  expect(run.code).toBe(1)
})

// `--host fe80::1`, a link-local address as `ip addr` shows it, cannot be
// bound without its interface: listen's `EINVAL: invalid argument` was
// printed as it came, exit 1 — a failure of the machine, where the
// setting is the caller's, as an address the machine does not have is.
// A multicast address and an interface the machine lacks are refused the
// same way, each told why (the interface advice fits neither).
it.for([
  [
    'fe80::1',
    'not an address to listen on as written (a link-local IPv6 address needs its interface after a %, as in fe80::1%eth0)',
  ],
  ['ff02::1', 'a multicast address, which cannot be listened on'],
  ['fe80::1%nosuch0', 'this machine has no interface nosuch0'],
] as const)(
  'an IPv6 address listen() refuses as written (%s): a bad --host, exit 2, saying why',
  async ([host, why], ctx) => {
    const probe = createServer()
    const refused = await new Promise<string | undefined>((resolve) => {
      probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code))
      probe.listen(0, host, () => probe.close(() => resolve(undefined)))
    })
    // Only where listen() itself says EINVAL for it (Linux with IPv6).
    if (refused !== 'EINVAL') return ctx.skip()
    const run = await runMain(['gateway', '--config', writeConfig(), '--host', host, '--port', '0'])
    expect(run.stderr).toBe(
      `hourglass gateway: cannot listen on ${host}: ${why} (set --host or HOST; in a container, 0.0.0.0)\n`,
    )
    expect(run.stdout).toBe('')
    expect(run.code).toBe(2)
  },
)
