import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fallback, type Harness, startHarness } from '../support/harness.js'
import { rawExchange } from '../support/rawExchange.js'

const BODY = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
const post = (id: string) =>
  'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
  `x-request-id: ${id}\r\ncontent-length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`

describe('what Node’s parser refuses after a request was handed over, its client still there', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  const sockets: Socket[] = []
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy()
    await harness?.close()
    await fake?.close()
    fake = undefined
    harness = undefined
  })
  const start = async () => {
    fake = await startFakeProvider({
      dialect: 'openai',
      reply: reply.text('hi', { latencyMs: 50 }),
    })
    harness = await startHarness({
      providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
      models: { m: fallback(['p', 'gpt']) },
    })
    return harness
  }

  it('a chunked body with a bad chunk size: 400 invalid_body with its x-request-id, its line 400 — not a bare 400 logged 499', async () => {
    const { url, logs } = await start()
    const answer = await rawExchange(
      url,
      'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
        'x-request-id: bad-chunk\r\ntransfer-encoding: chunked\r\n\r\n' +
        `a\r\n${BODY.slice(0, 10)}\r\nzz\r\n${BODY.slice(10)}\r\n0\r\n\r\n`,
      sockets,
    )
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request')
    expect(answer).toMatch(/^x-request-id: bad-chunk$/im)
    expect(answer).toContain('"code":"invalid_body"')
    await expect
      .poll(() =>
        logs
          .filter((l) => l.event === 'request')
          .map((l) => [l['requestId'], l['status'], l['error']]),
      )
      .toEqual([['bad-chunk', 400, 'invalid_body']])
    const metrics = await (await fetch(`${url}/metrics`)).text()
    expect(metrics).toContain('hourglass_gateway_errors_total{kind="invalid_body"} 1')
    expect(metrics).not.toContain('kind="client_closed"')
    expect(fake!.requests).toHaveLength(0)
  })

  it('pipelined behind a request being answered (a control character in its x-request-id): the first gets its 200, then the 400 with an id and its line', async () => {
    const { url, logs } = await start()
    const answer = await rawExchange(
      url,
      `${post('first')}GET /v1/models HTTP/1.1\r\nhost: x\r\nx-request-id: a\x01b\r\n\r\n`,
      sockets,
    )
    expect(answer.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 400'])
    expect(answer.match(/^x-request-id: .*$/gim)).toHaveLength(2)
    // One line each, in either order: the refusal's is written when the
    // answer ahead closes, the first's after its awaited 'finish' — on Node
    // 22+ a pipelined response's 'finish' and 'close' come in one turn, so
    // the refusal's line is written first there (its answer still second).
    const lines = logs
      .filter((l) => l.event === 'request')
      .sort((a, b) => Number(a['status']) - Number(b['status']))
    expect(lines.map((l) => [l['status'], l['error'] ?? null])).toEqual([
      [200, null],
      [400, 'invalid_request'],
    ])
    expect(lines[0]).toMatchObject({ requestId: 'first' })
    expect(fake!.requests).toHaveLength(1)
  })

  it('pipelined behind a request that said Connection: close: both answers before it go out, nothing after', async () => {
    const { url, logs } = await start()
    const answer = await rawExchange(
      url,
      post('first') +
        post('closing').replace('host: x', 'host: x\r\nconnection: close') +
        post('after'),
      sockets,
    )
    expect(answer.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200'])
    expect(
      logs.filter((l) => l.event === 'request').map((l) => [l['requestId'], l['status']]),
    ).toEqual([
      ['first', 200],
      ['closing', 200],
    ])
  })

  it('a malformed body from a client that sends its whole upload before reading (python requests): the 400 still reaches it, no reset', async () => {
    const { url, logs } = await start()
    const socket = connect(Number(new URL(url).port), '127.0.0.1')
    sockets.push(socket)
    await once(socket, 'connect')
    let received = ''
    let writeError: string | undefined
    socket.on('data', (chunk) => {
      received += chunk
    })
    socket.on('error', (e: NodeJS.ErrnoException) => {
      writeError ??= e.code
    })
    const closed = new Promise((resolve) => socket.on('close', resolve))
    socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
        'x-request-id: bad-upload\r\ntransfer-encoding: chunked\r\n\r\na\r\n{"model":"\r\nzz\r\n',
    )
    // A megabyte more of the upload, written whatever the server answered.
    const chunk = Buffer.alloc(64 * 1024, 'a')
    for (let sent = 0; sent < 1024 * 1024 && writeError === undefined && !socket.destroyed; ) {
      await new Promise<void>((resolve) => socket.write(chunk, () => resolve()))
      sent += chunk.length
      // Paced as a client's upload is: the server's answer comes meanwhile.
      await new Promise((resolve) => setImmediate(resolve))
    }
    if (!socket.destroyed) socket.end()
    await closed
    expect(writeError).toBeUndefined()
    expect(received.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request')
    await expect
      .poll(() =>
        logs
          .filter((l) => l.event === 'request')
          .map((l) => [l['requestId'], l['status'], l['error']]),
      )
      .toEqual([['bad-upload', 400, 'invalid_body']])
  })

  it('pipelined behind a request being answered, a request whose own body is malformed: answered 400 invalid_body when its turn comes, not held to its deadline', async () => {
    const { url, logs } = await start()
    const answer = await rawExchange(
      url,
      `${post('first')}POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
        `x-request-id: second\r\ntransfer-encoding: chunked\r\n\r\na\r\n${BODY.slice(0, 10)}\r\nzz\r\n`,
      sockets,
    )
    expect(answer.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 400'])
    await expect
      .poll(() =>
        logs
          .filter((l) => l.event === 'request')
          .map((l) => [l['requestId'], l['status'], l['error'] ?? null]),
      )
      .toEqual([
        ['first', 200, null],
        ['second', 400, 'invalid_body'],
      ])
  })

  it.each(['/readyz', '/metrics', '/v1/models'])(
    'GET %s with a malformed chunked body, its handler not reading it: refused alone, its own answer never written after (no ERR_HTTP_HEADERS_SENT)',
    async (path) => {
      const { url, logs } = await start()
      const answer = await rawExchange(
        url,
        `GET ${path} HTTP/1.1\r\nhost: x\r\nx-request-id: g\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n`,
        sockets,
      )
      expect(answer.split('\r\n')[0]).toMatch(/^HTTP\/1\.1 (400|200)/)
      // Closed, the gateway has let its handler end: an answer that handler
      // wrote after the refusal rejected unhandled by then (an error of this run).
      await harness?.close()
      harness = undefined
      expect(logs.filter((l) => l.level === 'error')).toEqual([])
    },
  )
})
