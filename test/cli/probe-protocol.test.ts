import { createServer as createHttpServer } from 'node:http'
import { type AddressInfo, createServer, type Server } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { assertBuilt, hourglassBin, runNode } from './runNode.js'

let server: Server | undefined
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

async function listen(s: Server): Promise<number> {
  server = s
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  return (s.address() as AddressInfo).port
}

async function probe(url: string) {
  assertBuilt()
  return runNode([hourglassBin, 'probe', url, '--warmup', '0', '--samples', '1'], {
    killAfterMs: 20_000,
  })
}

describe('hourglass probe <url> on a server that speaks another protocol', () => {
  it('https:// to a plain HTTP port: one line naming the TLS handshake and what it means, exit 1', async () => {
    const port = await listen(
      createHttpServer((_req, res) => res.end('ok')).on('connection', (socket) =>
        socket.on('error', () => {}),
      ),
    )
    const run = await probe(`https://127.0.0.1:${port}/`)
    expect(run.code, run.stderr).toBe(1)
    const last = run.stderr.trimEnd().split('\n').at(-1)
    expect(last).toBe(
      `hourglass probe: TLS handshake with 127.0.0.1:${port} failed (ERR_SSL_WRONG_VERSION_NUMBER: the server does not speak TLS on this port; is it http://?)`,
    )
  })

  it('http:// to a server that answers something else: one line saying it is not HTTP/1.1, exit 1', async () => {
    const port = await listen(
      createServer((socket) => {
        socket.on('error', () => {})
        socket.once('data', () => socket.end('SSH-2.0-OpenSSH_9.2\r\n\r\n'))
      }),
    )
    const run = await probe(`http://127.0.0.1:${port}/`)
    expect(run.code, run.stderr).toBe(1)
    const last = run.stderr.trimEnd().split('\n').at(-1)
    expect(last).toMatch(
      new RegExp(
        `^hourglass probe: 127\\.0\\.0\\.1:${port} did not answer in HTTP/1\\.1 \\(.+\\)$`,
      ),
    )
  })
})
