import { afterEach, describe, expect, it } from 'vitest'
import {
  byteChunks,
  type ReplayServer,
  startReplayServer,
} from '../../../../test/support/replayServer.js'
import { isSseBufferOverflow } from '../../src/errors/SseBufferOverflowError.js'
import { decodeSse, SseDecoder } from '../../src/sse/SseDecoder.js'
import type { SseFrame } from '../../src/sse/SseFrame.js'

const enc = new TextEncoder()

function decodeAll(chunks: readonly Uint8Array[], decoder = new SseDecoder()): SseFrame[] {
  return [...chunks.flatMap((c) => decoder.push(c)), ...decoder.end()]
}

let server: ReplayServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('SseDecoder', () => {
  it('joins a character split across network chunks instead of producing U+FFFD', async () => {
    const stream = 'data: {"t":"你好😀世界"}\n\n'
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: byteChunks(stream, 1),
    }))
    const res = await fetch(server.url)
    const frames: SseFrame[] = []
    for await (const f of decodeSse(res.body!)) frames.push(f)
    expect(frames).toEqual([
      { type: 'event', event: undefined, data: '{"t":"你好😀世界"}', id: undefined },
    ])
  })

  it('reports `: keep-alive` as a comment, separately from events and in stream order', () => {
    const frames = decodeAll([enc.encode(': keep-alive\n\ndata: a\n\n: keep-alive\n\ndata: b\n\n')])
    expect(frames).toEqual([
      { type: 'comment', comment: 'keep-alive' },
      { type: 'event', event: undefined, data: 'a', id: undefined },
      { type: 'comment', comment: 'keep-alive' },
      { type: 'event', event: undefined, data: 'b', id: undefined },
    ])
  })

  it('reads event names, ids and multi-line data with \\r\\n, \\r and \\n line endings', () => {
    for (const eol of ['\n', '\r\n', '\r']) {
      const text = `event: delta${eol}id: 7${eol}data: one${eol}data: two${eol}${eol}`
      expect(decodeAll(byteChunks(text, 1))).toEqual([
        { type: 'event', event: 'delta', data: 'one\ntwo', id: '7' },
      ])
    }
  })

  it('passes on an event whose lines end in a bare CR when its chunk arrives, not with the next one', () => {
    const decoder = new SseDecoder()
    expect(decoder.push(enc.encode('data: a\r\r'))).toEqual([
      { type: 'event', event: undefined, data: 'a', id: undefined },
    ])
    // A CRLF split across chunks is still one line ending: the LF that follows
    // is no blank line of its own, and the next event reads as it was sent.
    expect(decoder.push(enc.encode('data: b\r'))).toEqual([])
    expect(decoder.push(enc.encode('\n\r\n'))).toEqual([
      { type: 'event', event: undefined, data: 'b', id: undefined },
    ])
    expect(decoder.push(enc.encode('data: c\r'))).toEqual([])
    expect(decoder.push(enc.encode('\ndata: d\r\n\r\n'))).toEqual([
      { type: 'event', event: undefined, data: 'c\nd', id: undefined },
    ])
    expect(decoder.end()).toEqual([])
  })

  it('drops a leading BOM even when its bytes arrive one at a time', () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode('data: x\n\n')])
    expect(decodeAll([...bytes].map((b) => new Uint8Array([b])))).toEqual([
      { type: 'event', event: undefined, data: 'x', id: undefined },
    ])
  })

  it('emits whole events only: an event cut off by the end of the stream is dropped', () => {
    const decoder = new SseDecoder()
    expect(decoder.push(enc.encode('data: whole\n\ndata: ha'))).toHaveLength(1)
    expect(decoder.push(enc.encode('lf'))).toEqual([])
    expect(decoder.end()).toEqual([])
  })

  it('turns invalid UTF-8 into U+FFFD instead of throwing', () => {
    const frames = decodeAll([new Uint8Array([...enc.encode('data: '), 0xff, 0xfe, 0x0a, 0x0a])])
    expect(frames).toEqual([
      { type: 'event', event: undefined, data: '\uFFFD\uFFFD', id: undefined },
    ])
  })

  it('fails with a typed overflow error, and keeps failing, when an event outgrows maxBufferChars', () => {
    const decoder = new SseDecoder({ maxBufferChars: 64 })
    let caught: unknown
    try {
      decoder.push(enc.encode(`data: ${'x'.repeat(100)}`))
    } catch (error) {
      caught = error
    }
    expect(isSseBufferOverflow(caught)).toBe(true)
    expect(() => decoder.push(enc.encode('\n\n'))).toThrow(/64 chars/)
  })
})
