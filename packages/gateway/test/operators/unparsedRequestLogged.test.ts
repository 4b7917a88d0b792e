import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import type { FakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'
import { rawExchange as exchange, rawHeaderOf as headerOf } from '../support/rawExchange.js'

/**
 * A request Node's HTTP parser cannot read — the hostile `x-request-id` with
 * a control character, headers past Node's limit — was answered by Node
 * itself under `startGateway`: a bare `400 Bad Request`, no body, no
 * `x-request-id`, no log line, so nobody could trace the refusal. It is the
 * gateway's answer now: OpenAI's error shape, an id, a `request` line.
 */
describe('a request Node cannot parse, under startGateway', () => {
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

  async function start(options: Parameters<typeof startHarness>[1] = {}) {
    const provider = await fakeProvider('openai', ['sk-unparsed-0001'])
    fake = provider.fake
    harness = await startHarness(
      {
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'x']) },
      },
      options,
    )
    return harness
  }

  it('a control character in x-request-id: 400 with an id, invalid_request, and its line', async () => {
    const { url, logs } = await start()
    const answer = await exchange(
      url,
      'GET /v1/models HTTP/1.1\r\nhost: x\r\nx-request-id: a\x01b\r\n\r\n',
      sockets,
    )
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request')
    const id = headerOf(answer, 'x-request-id')
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(headerOf(answer, 'connection')).toBe('close')
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as {
      error: { code: string; type: string }
    }
    expect(body.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' })
    expect(logs.filter((l) => l.event === 'request')).toEqual([
      expect.objectContaining({
        level: 'info',
        requestId: id,
        status: 400,
        error: 'invalid_request',
        reason: 'HPE_INVALID_HEADER_TOKEN',
      }),
    ])
    expect(fake!.requests).toHaveLength(0)
  })

  it('headers past Node’s limit: 431 with an id and its line', async () => {
    const { url, logs } = await start()
    const answer = await exchange(
      url,
      `GET /v1/models HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`,
      sockets,
    )
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large')
    const id = headerOf(answer, 'x-request-id')
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(logs.filter((l) => l.event === 'request')).toEqual([
      expect.objectContaining({ requestId: id, status: 431, error: 'invalid_request' }),
    ])
  })

  it('an HTTP/1.1 request without Host: 400 with an id, invalid_request naming it, and its line', async () => {
    const { url, logs } = await start()
    // Node refused it itself (requireHostHeader), ahead of every listener:
    // `400 Bad Request`, an empty body, no id, no line.
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
    const answer = await exchange(
      url,
      'POST /v1/chat/completions HTTP/1.1\r\ncontent-type: application/json\r\n' +
        `content-length: ${body.length}\r\n\r\n${body}`,
      sockets,
    )
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request')
    const id = headerOf(answer, 'x-request-id')
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(headerOf(answer, 'connection')).toBe('close')
    const error = (
      JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as {
        error: { code: string; message: string; param: string | null }
      }
    ).error
    expect(error).toMatchObject({ code: 'invalid_request', param: null })
    expect(error.message).toContain('Host')
    expect(logs.filter((l) => l.event === 'request')).toEqual([
      expect.objectContaining({
        requestId: id,
        status: 400,
        error: 'invalid_request',
        reason: 'missing_host',
      }),
    ])
    expect(fake!.requests).toHaveLength(0)
  })

  it('an HTTP/1.1 request without Host keeps the client’s x-request-id, and its line has path and method', async () => {
    const { url, logs } = await start()
    // Its headers were read: the id the client sent was dropped for a new
    // UUID, and its line named no path, though every other line does.
    const answer = await exchange(
      url,
      'GET /v1/models?x=1 HTTP/1.1\r\nx-request-id: trace-hostless\r\n\r\n',
      sockets,
    )
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request')
    expect(headerOf(answer, 'x-request-id')).toBe('trace-hostless')
    expect(logs.filter((l) => l.event === 'request')).toEqual([
      expect.objectContaining({
        requestId: 'trace-hostless',
        path: '/v1/models',
        method: 'GET',
        status: 400,
        reason: 'missing_host',
      }),
    ])
  })

  it('Expect: 100-continue without Host, mountDeadline false: the 400 alone, no upload asked for', async () => {
    const { url, logs } = await start({ mountDeadline: false })
    const chat = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
    const head = (host: string) =>
      `POST /v1/chat/completions HTTP/1.1\r\n${host}expect: 100-continue\r\n` +
      `content-type: application/json\r\ncontent-length: ${chat.length}\r\n`
    // Node checked Host before Expect: `100 Continue` went to no such
    // client, and it was told to upload a body read only to be dropped.
    const refused = await exchange(url, `${head('')}\r\n`, sockets)
    expect(refused.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request')
    expect(refused).not.toContain('100 Continue')
    // With its Host it is asked for its body, as Node asked without the gateway's listener.
    const served = await exchange(
      url,
      `${head('host: x\r\n')}connection: close\r\n\r\n${chat}`,
      sockets,
    )
    expect(served.match(/^HTTP\/1\.1 \d+/gm)).toEqual(['HTTP/1.1 100', 'HTTP/1.1 200'])
    expect(logs.filter((l) => l.event === 'request').map((l) => l.status)).toEqual([400, 200])
  })

  it('a request pipelined behind an answer that closes the connection is not served: no upstream call, its line 499', async () => {
    const { url, logs } = await start()
    const chat = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
    const post = (head: string) =>
      `POST /v1/chat/completions HTTP/1.1\r\n${head}content-type: application/json\r\n` +
      `content-length: ${chat.length}\r\n\r\n${chat}`
    // Sent in the same write as the refused request: Node parses it and hands
    // it over, but gives its answer no socket (queued behind a last one). It
    // was served all the same: an upstream call, a 200 line, nothing sent.
    const behind = post('host: x\r\nx-request-id: behind\r\n')
    const refused: Array<[status: string, request: string]> = [
      ['400', post('')],
      ['400', 'GET /healthz HTTP/1.1\r\ncontent-length: 0\r\n\r\n'],
      ['400', 'GET /healthz HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n'],
      ['400', 'GET /healthz HTTP/1.1\r\n\r\n'],
      // A refusal that closes after its answer, as the hostless one does.
      ['405', 'PUT /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}'],
    ]
    for (const [status, request] of refused) {
      const from = logs.length
      const answer = await exchange(url, request + behind, sockets)
      expect(answer.match(/^HTTP\/1\.1 \d+/gm)).toEqual([`HTTP/1.1 ${status}`])
      expect(
        logs
          .slice(from)
          .filter((l) => l.event === 'request')
          .map((l) => [l.status, l.requestId === 'behind']),
      ).toEqual([
        [Number(status), false],
        [499, true],
      ])
      expect(logs.at(-1)).toMatchObject({
        path: '/v1/chat/completions',
        error: 'client_closed',
        reason: 'behind_last_answer',
      })
    }
    expect(fake!.requests).toHaveLength(0)
  })

  it('a request already being answered keeps its own line (499) and Node’s bare 400, as before', async () => {
    const { url, logs } = await start()
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
    const socket = connect(Number(new URL(url).port), '127.0.0.1')
    sockets.push(socket)
    await once(socket, 'connect')
    const chunks: Buffer[] = []
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {})
    const closed = once(socket, 'close')
    // Its headers and part of its body, then the client's end: the request
    // is handed to the gateway with its headers, then the parser fails on
    // the body cut short.
    socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
        `x-request-id: cut-body\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    )
    socket.end()
    await closed
    const answer = Buffer.concat(chunks).toString('latin1')
    expect(answer).toBe('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')
    await expect
      .poll(() => logs.filter((l) => l.event === 'request'))
      .toEqual([expect.objectContaining({ requestId: 'cut-body', status: 499 })])
  })
})
