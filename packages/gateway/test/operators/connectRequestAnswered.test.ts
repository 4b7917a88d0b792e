import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import type { FakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/** Sends `text` on a new connection; resolves everything received until the server closes it. */
async function exchange(url: string, text: string, sockets: Socket[]): Promise<string> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  sockets.push(socket)
  await once(socket, 'connect')
  const chunks: Buffer[] = []
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  socket.on('error', () => {})
  const closed = once(socket, 'close')
  socket.write(text)
  await closed
  return Buffer.concat(chunks).toString('latin1')
}

function headerOf(answer: string, name: string): string | undefined {
  const head = answer.slice(0, answer.indexOf('\r\n\r\n'))
  return new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1]
}

/**
 * A CONNECT (a client, or curl -x, given the gateway as its HTTPS proxy)
 * met Node's default for a server with no 'connect' listener: the socket
 * destroyed, nothing written, no x-request-id, no log line — curl said
 * "Proxy CONNECT aborted" and the gateway's log had nothing for it.
 */
describe('a CONNECT request, under startGateway', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  const sockets: Socket[] = []
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy()
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  it('is answered 405 in OpenAI’s error shape, with its x-request-id and a request line', async () => {
    const provider = await fakeProvider('openai', ['sk-connect-0001'])
    fake = provider.fake
    harness = await startHarness(
      { providers: { p: provider.entry }, models: { m: fallback(['p', 'x']) } },
      { drainOnSignals: false },
    )
    const answer = await exchange(
      harness.url,
      'CONNECT api.openai.com:443 HTTP/1.1\r\nhost: api.openai.com:443\r\nx-request-id: tunnel-1\r\n\r\n',
      sockets,
    )
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 405 Method Not Allowed')
    expect(headerOf(answer, 'x-request-id')).toBe('tunnel-1')
    expect(headerOf(answer, 'connection')).toBe('close')
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as {
      error: { code: string; type: string }
    }
    expect(body.error).toMatchObject({ code: 'method_not_allowed', type: 'invalid_request_error' })
    expect(harness.logs.filter((l) => l.event === 'request')).toEqual([
      expect.objectContaining({
        requestId: 'tunnel-1',
        method: 'CONNECT',
        status: 405,
        error: 'method_not_allowed',
      }),
    ])
    expect(fake.requests).toHaveLength(0)
  })
})
