import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { createServer, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LogRecord } from '../src/index.js'
import { startGateway } from '../src/index.js'

/**
 * ioredis reads its options from the URL's query as well as from before the
 * host: `redis://host:6379?password=…` is sent as the password
 * (`HELLO 3 AUTH default …`). Only the password before the host was in the
 * gateway's scrub list, so a refusal that quotes what it got — a Redis proxy's
 * `WRONGPASS invalid password '…'` — put the password of the query form in
 * the `redis` warning line, where the same password written before the host
 * read `[redacted]`.
 */
describe('a Redis password given in the URL query is scrubbed as one before the host is', () => {
  const PASS = 'redis-pass-0123456789Q'
  const sockets = new Set<Socket>()
  // Refuses AUTH, quoting the password it was sent.
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('data', (data) => {
      const text = String(data)
      const auth = /AUTH\r\n\$\d+\r\n[^\r]*\r\n\$\d+\r\n([^\r]*)\r\n/.exec(text)
      if (auth) socket.write(`-WRONGPASS invalid password '${auth[1]}'\r\n`)
      for (const _ of text.matchAll(/SETINFO/g)) socket.write('+OK\r\n')
    })
  })
  let port = 0
  beforeAll(async () => {
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    port = (server.address() as AddressInfo).port
  })
  afterAll(() => {
    for (const s of sockets) s.destroy()
    server.close()
  })

  it.each([
    ['before the host', () => `redis://:${PASS}@127.0.0.1:${port}`],
    ['in the query', () => `redis://127.0.0.1:${port}?password=${PASS}`],
  ])('%s', async (_label, url) => {
    const logs: LogRecord[] = []
    const running = await startGateway({
      config: {
        providers: {
          p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['sk-test-abcdefgh'] },
        },
        models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
        redis: { url: url() },
      },
      port: 0,
      logger: (record) => logs.push(record),
      drainOnSignals: false,
    })
    await running.close()
    const redis = logs.find((l) => l['event'] === 'redis')
    expect(redis?.['msg']).toContain("WRONGPASS invalid password '[redacted]'")
    expect(JSON.stringify(logs)).not.toContain(PASS)
  })
})
