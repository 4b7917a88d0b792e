import { once } from 'node:events'
import { connect } from 'node:net'
import { gzipSync } from 'node:zlib'
import type { FakeProvider } from '@hourglass/testkit'
import { Pool } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A chat request that sent no body was read as `{}` (body-parser's reading
 * of an empty one) and refused `model: expected a string`: a missing field
 * of a body the client never sent, which sent people looking at their
 * `model`. It is a 400 saying the body is empty. `null` and other JSON that
 * is not an object are 400s too, never a 500.
 */
const EMPTY = {
  status: 400,
  error: {
    message:
      'the body is empty: send a JSON object with model and messages (Content-Type: application/json)',
    type: 'invalid_request_error',
    param: 'body',
    code: 'invalid_request',
  },
}

describe('an empty chat request body', () => {
  let fake: FakeProvider
  let harness: Harness
  let pool: Pool
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['k'])
    fake = p.fake
    harness = await startHarness({ providers: { p: p.entry }, models: { m: fallback(['p', 'x']) } })
    pool = new Pool(harness.url)
  })
  afterAll(async () => {
    await pool?.close()
    await harness?.close()
    await fake?.close()
  })

  async function post(body: string | Buffer, headers: Record<string, string>) {
    const res = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers, body })
    const answer = (await res.body.json()) as { error: unknown }
    return { status: res.statusCode, error: answer.error }
  }

  it('Content-Length: 0, a gzip of nothing, a byte order mark alone: a 400 saying the body is empty', async () => {
    const json = { 'content-type': 'application/json' }
    expect(await post('', { ...json, 'content-length': '0' })).toEqual(EMPTY)
    expect(await post(gzipSync(''), { ...json, 'content-encoding': 'gzip' })).toEqual(EMPTY)
    // A byte order mark alone decodes to nothing.
    expect(await post(Buffer.from([0xef, 0xbb, 0xbf]), json)).toEqual(EMPTY)
    expect(fake.requests).toHaveLength(0)
  })

  /** A request written by hand; the answer's status line and JSON body. */
  async function raw(head: string) {
    const url = new URL(harness.url)
    const socket = connect({ host: url.hostname, port: Number(url.port) })
    socket.on('error', () => {})
    await once(socket, 'connect')
    let text = ''
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8')
    })
    const closed = once(socket, 'close')
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\n${head}`,
    )
    await closed
    const status = Number(/^HTTP\/1\.1 (\d+) /.exec(text)?.[1])
    return { status, ...JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) }
  }

  it('chunked with no chunk, or no body at all (no Content-Length or Transfer-Encoding, as curl -X POST sends): the same 400', async () => {
    expect(await raw('transfer-encoding: chunked\r\n\r\n0\r\n\r\n')).toEqual(EMPTY)
    expect(await raw('\r\n')).toEqual(EMPTY)
    expect(fake.requests).toHaveLength(0)
  })

  it('{} is a body without its fields, told so; null and other JSON that is no object: a 400, never a 500', async () => {
    const json = { 'content-type': 'application/json' }
    expect(await post('{}', json)).toEqual({
      status: 400,
      error: expect.objectContaining({ param: 'model', code: 'invalid_request' }),
    })
    for (const body of ['null', ' null ', '"text"', '1', 'true']) {
      expect(await post(body, json), body).toEqual({
        status: 400,
        error: expect.objectContaining({ code: 'invalid_json', type: 'invalid_request_error' }),
      })
    }
    expect(fake.requests).toHaveLength(0)
  })
})
