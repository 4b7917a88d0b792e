import { createServer, type Server } from 'node:net'
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'
import { replaceLookup } from '../../../test/support/replaceLookup.js'
import { useGatewayConfig } from './support/gatewayConfig.js'

// `hourglass gateway --host <name>` looked the name up twice: the command,
// to refuse a name that does not resolve, then startGateway, to listen —
// two answers that may differ (a round-robin name, a resolver that fails in
// between: the second failure was said as "does not resolve", exit 2, of a
// name that had just resolved). And a resolver that is down (`EAI_AGAIN`)
// was said as "the host name does not resolve", exit 2, a bad argument:
// it is a failure of the machine's DNS, not of the name, and running the
// same command again may work. The name is now looked up once, and
// startGateway given its address; a resolver down is a failure (exit 1)
// said as one. The resolver is a stub: no DNS is asked.

const HOST = 'gw.example.test'

// The builtin's own export, replaced (not vi.mock: a file shares its worker
// with others that may have loaded the CLI with the real module already).
const lookup = vi.fn()
replaceLookup((host) => (host === HOST ? lookup(host) : undefined))

const resolverDown = () =>
  Object.assign(new Error(`getaddrinfo EAI_AGAIN ${HOST}`), {
    code: 'EAI_AGAIN',
    syscall: 'getaddrinfo',
    hostname: HOST,
  })

const writeConfig = useGatewayConfig()
let taken: Server | undefined
beforeEach(() => {
  lookup.mockReset()
})
afterEach(async () => {
  await new Promise((resolve) => (taken ? taken.close(resolve) : resolve(undefined)))
  taken = undefined
})

it('a resolver that is down (EAI_AGAIN) is a failure of the machine, said as one: exit 1, not a bad --host', async () => {
  lookup.mockRejectedValue(resolverDown())
  const run = await runMain(['gateway', '--config', writeConfig(), '--host', HOST])
  expect(run.code).toBe(1)
  expect(run.stderr).toBe(
    `hourglass gateway: cannot look up ${HOST}: the resolver failed for now (EAI_AGAIN), a fault of this machine's DNS, not of the name: try again, or set --host or HOST to an IP address\n`,
  )
})

it('the host is looked up once, and the gateway listens on that answer', async () => {
  // Taken: the gateway's listen fails at once, after its lookup (or lookups).
  taken = createServer()
  await new Promise<void>((resolve) => taken!.listen(0, '127.0.0.1', resolve))
  const port = (taken.address() as { port: number }).port
  // A second lookup would get another answer: the resolver gone down.
  lookup.mockResolvedValueOnce({ address: '127.0.0.1', family: 4 })
  lookup.mockRejectedValue(resolverDown())
  const run = await runMain([
    'gateway',
    '--config',
    writeConfig(),
    '--host',
    HOST,
    '--port',
    `${port}`,
  ])
  expect(run.stderr).toBe(
    `hourglass gateway: ${HOST}:${port} is already in use: another process listens there (pick another --port, or 0 for any free port)\n`,
  )
  expect(run.code).toBe(1)
  expect(lookup).toHaveBeenCalledTimes(1)
})

it('a name the resolver does not know is still a bad --host (exit 2)', async () => {
  lookup.mockRejectedValue(
    Object.assign(new Error(`getaddrinfo ENOTFOUND ${HOST}`), { code: 'ENOTFOUND' }),
  )
  const run = await runMain(['gateway', '--config', writeConfig(), '--host', HOST])
  expect(run.code).toBe(2)
  expect(run.stderr).toBe(
    `hourglass gateway: cannot listen on ${HOST}: the host name does not resolve (set --host or HOST; in a container, 0.0.0.0)\n`,
  )
  expect(lookup).toHaveBeenCalledTimes(1)
})
