import { once } from 'node:events'
import { connect } from 'node:net'
import { type ProviderReply, reply, startFakeProvider } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { type LogRecord, startGateway } from '../../src/index.js'

/**
 * A drain with two requests pipelined on one connection: the first one's
 * answer said `connection: close`, so Node ended the connection after it and
 * the second's answer — written, logged 200, counted drained — never
 * reached the client. Only the last answer on a connection closes it.
 */
it('both answers of a pipelined pair reach the client during a drain, and both are drained', async () => {
  const fake = await startFakeProvider({ dialect: 'openai' })
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  let calls = 0
  fake.setReply((): ProviderReply | Promise<ProviderReply> =>
    ++calls === 1 ? held.then(() => reply.text('first')) : reply.text('second'),
  )
  const logs: LogRecord[] = []
  const running = await startGateway({
    config: {
      providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
      models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
    },
    port: 0,
    drainOnSignals: false,
    drainTimeoutMs: 10_000,
    logger: (record) => logs.push(record),
  })
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
  const one =
    'POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\ncontent-type: application/json\r\n' +
    `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  const socket = connect(Number(new URL(running.url).port), '127.0.0.1')
  socket.on('error', () => {})
  await once(socket, 'connect')
  let received = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    received += chunk
  })
  const closed = once(socket, 'close')
  socket.write(one + one)
  await fake.waitForRequests(2)

  const report = running.close()
  release()

  expect(await report).toMatchObject({ inFlight: 2, drained: 2, cutOff: 0 })
  await closed
  expect(received.match(/HTTP\/1\.1 200 OK/g)).toHaveLength(2)
  expect(received).toContain('"first"')
  expect(received).toContain('"second"')
  // The last answer on the connection closed it.
  expect(received.match(/connection: close/gi)).toHaveLength(1)
  await fake.close()
})
