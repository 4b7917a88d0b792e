import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createPlainServer, type Server } from 'node:http'
import { createServer } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, deadlineInterceptor, type LookupFunction } from '../src/index.js'

// An Agent's `socketPath` (a Unix socket: Docker's API, a sidecar) reaches a
// connector of one's own as `opts.socketPath`, and undici's own connector
// connects there. createConnector ignored it: it looked the URL's name up
// and connected over TCP to that host's port — refused, or, worse, answered
// by whatever listens there. It connects to the socket now, with no lookup,
// within its connect limit, TLS over it for https. No timing is asserted.

const cert = readFileSync(new URL('./fixtures/svc.test.cert.pem', import.meta.url))
const key = readFileSync(new URL('./fixtures/svc.test.key.pem', import.meta.url))

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function listenOn(server: Server, path: string): Promise<void> {
  await new Promise<void>((resolve) => server.listen(path, resolve))
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
}

function socketDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'hg-sock-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A lookup that must not be asked: the name does not resolve. */
function refusingLookup(asked: string[]): LookupFunction {
  return (hostname, _options, callback) => {
    asked.push(hostname)
    const error = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
      code: 'ENOTFOUND',
    })
    callback(error, [])
  }
}

it('connects to the Agent’s socketPath, with no lookup of the URL’s name', async () => {
  const path = join(socketDir(), 'api.sock')
  await listenOn(
    createPlainServer((req, res) => res.end(`over the socket: ${req.url}`)),
    path,
  )
  const asked: string[] = []
  const agent = new Agent({
    socketPath: path,
    connect: createConnector({ lookup: refusingLookup(asked), connectTimeoutMs: 1000 }),
    headersTimeout: 0,
    bodyTimeout: 0,
  })
  cleanups.push(() => agent.close())
  const dispatcher = agent.compose(deadlineInterceptor())
  const { statusCode, body } = await request('http://docker.invalid/v1/info', { dispatcher })
  expect(statusCode).toBe(200)
  expect(await body.text()).toBe('over the socket: /v1/info')
  expect(asked).toEqual([])
})

it('runs TLS over the socket for https, with the URL’s name as servername', async () => {
  const path = join(socketDir(), 'tls.sock')
  const names: (string | false)[] = []
  const server = createServer({ cert, key }, (_req, res) => res.end('tls over the socket'))
  server.on('secureConnection', (socket) =>
    names.push((socket as typeof socket & { servername: string | false }).servername),
  )
  await listenOn(server as unknown as Server, path)
  const asked: string[] = []
  const agent = new Agent({
    socketPath: path,
    connect: createConnector({ lookup: refusingLookup(asked), tls: { ca: cert } }),
    headersTimeout: 0,
    bodyTimeout: 0,
  })
  cleanups.push(() => agent.close())
  const { body } = await request('https://svc.test/', { dispatcher: agent })
  expect(await body.text()).toBe('tls over the socket')
  expect(names).toEqual(['svc.test'])
  expect(asked).toEqual([])
})
