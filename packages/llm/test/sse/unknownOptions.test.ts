import { describe, expect, it } from 'vitest'
import { isSseBufferOverflow } from '../../src/errors/SseBufferOverflowError.js'
import { decodeSse, SseDecoder } from '../../src/sse/SseDecoder.js'

// The bound on what a stream may buffer is `maxBufferChars`. Written under
// eventsource-parser's own name, `maxBufferSize` (the parser this decoder
// wraps), or misspelled, it was ignored: the 8 MiB default stayed in force
// while the caller believed the stream bounded at what they wrote.

const enc = new TextEncoder()
const long = enc.encode(`data: ${'x'.repeat(100_000)}`)

describe('SseDecoder options', () => {
  it('an option it does not read is a TypeError naming it and the one meant, not the default bound', () => {
    expect(() => new SseDecoder({ maxBufferSize: 1000 } as never)).toThrow(TypeError)
    expect(() => new SseDecoder({ maxBufferSize: 1000 } as never)).toThrow(
      /"maxBufferSize" \(did you mean maxBufferChars\?\).*SseDecoder/,
    )
    expect(() => new SseDecoder({ maxBuferChars: 1000 } as never)).toThrow(
      /did you mean maxBufferChars\?/,
    )
  })

  it('options that are no object are a TypeError naming the decoder, not a crash reading them', () => {
    for (const options of [null, 1000, 'big']) {
      expect(() => new SseDecoder(options as never)).toThrow(TypeError)
      expect(() => new SseDecoder(options as never)).toThrow(
        /SseDecoder: options must be an object/,
      )
    }
  })

  it('decodeSse refuses them before reading the body', async () => {
    let read = false
    async function* body() {
      read = true
      yield long
    }
    await expect(decodeSse(body(), { maxBufferSize: 1000 } as never).next()).rejects.toThrow(
      /maxBufferSize/,
    )
    expect(read).toBe(false)
  })

  it('the option by its name still bounds the buffer; none given is the default', () => {
    let thrown: unknown
    try {
      new SseDecoder({ maxBufferChars: 1000 }).push(long)
    } catch (error) {
      thrown = error
    }
    expect(isSseBufferOverflow(thrown)).toBe(true)
    expect(new SseDecoder().maxBufferChars).toBe(8 * 1024 * 1024)
    expect(new SseDecoder({}).push(enc.encode('data: a\n\n'))).toEqual([
      { type: 'event', event: undefined, data: 'a', id: undefined },
    ])
  })
})
