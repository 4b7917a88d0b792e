import { createParser, type EventSourceMessage } from 'eventsource-parser'

export interface ReadStream {
  /** Every SSE event, parsed by eventsource-parser (the parser the SDKs' ecosystem uses). */
  events: EventSourceMessage[]
  /** Comment lines (`: keep-alive` arrives as ` keep-alive`). */
  comments: string[]
  /** The whole body as text, decoded with one streaming decoder. */
  raw: string
  /** Every chunk as it arrived from the socket. */
  chunks: Uint8Array[]
  /** Set when the body broke before its end. */
  error: unknown
  /** ms from the response headers to the first data event. */
  firstEventMs: number | undefined
}

/** Reads a fetch response body as SSE, keeping what arrived even if the stream breaks. */
export async function readSse(response: Response): Promise<ReadStream> {
  const started = performance.now()
  const out: ReadStream = {
    events: [],
    comments: [],
    raw: '',
    chunks: [],
    error: undefined,
    firstEventMs: undefined,
  }
  const decoder = new TextDecoder()
  const parser = createParser({
    onEvent: (event) => {
      out.firstEventMs ??= performance.now() - started
      out.events.push(event)
    },
    onComment: (comment) => out.comments.push(comment),
  })
  const reader = response.body!.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      out.chunks.push(value)
      const text = decoder.decode(value, { stream: true })
      out.raw += text
      parser.feed(text)
    }
    out.raw += decoder.decode()
  } catch (error) {
    out.error = error
  }
  return out
}

/** Parses the `data:` of each event as JSON. */
export function dataOf<T = Record<string, unknown>>(stream: ReadStream): T[] {
  return stream.events.filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data) as T)
}
