import { readFileSync } from 'node:fs'
import {
  createSecureServer,
  type Http2SecureServer,
  type Http2Session,
  type ServerHttp2Stream,
} from 'node:http2'
import type { AddressInfo } from 'node:net'
import { Agent } from 'undici'
import { afterEach } from 'vitest'

// A self-signed certificate for svc.test, other.test and 127.0.0.1.
const cert = readFileSync(new URL('./fixtures/svc.test.cert.pem', import.meta.url))
const key = readFileSync(new URL('./fixtures/svc.test.key.pem', import.meta.url))

/**
 * An HTTP/2 server per test (`listen`) and an Agent of the caller's that
 * speaks HTTP/2 to it (`agent`: `allowH2`, undici's own limits off), both
 * closed after each test with every session the server opened.
 */
export function useH2Server() {
  let server: Http2SecureServer | undefined
  let agent: Agent | undefined
  const sessions = new Set<Http2Session>()
  afterEach(async () => {
    await agent?.destroy()
    for (const session of sessions) session.destroy()
    sessions.clear()
    await new Promise((resolve) => server?.close(resolve))
    server = agent = undefined
  })
  return {
    get agent(): Agent {
      if (agent === undefined) throw new Error('listen() was not called')
      return agent
    },
    /** Calls `onStream` for each request (its stream errors dropped); resolves to the URL of `path`. */
    async listen(onStream: (stream: ServerHttp2Stream) => void, path = '/'): Promise<string> {
      const listening = createSecureServer({ key, cert })
      server = listening
      listening.on('session', (session) => sessions.add(session))
      listening.on('stream', (stream: ServerHttp2Stream) => {
        stream.on('error', () => {})
        onStream(stream)
      })
      await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve))
      agent = new Agent({ allowH2: true, connect: { ca: cert }, headersTimeout: 0, bodyTimeout: 0 })
      return `https://127.0.0.1:${(listening.address() as AddressInfo).port}${path}`
    },
  }
}
