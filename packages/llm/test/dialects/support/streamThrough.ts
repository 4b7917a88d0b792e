import type { StreamParser } from '../../../src/dialects/Dialect.js'
import { decodeSse } from '../../../src/sse/SseDecoder.js'
import type { SseComment } from '../../../src/sse/SseFrame.js'
import type { StreamEvent } from '../../../src/types.js'

/**
 * Reads a fetch response body through the SSE decoder and a dialect's stream
 * parser, as an adapter would: comments are collected apart, every event goes
 * to the parser, the parser is ended when the body ends.
 */
export async function streamThrough(
  response: Response,
  parser: StreamParser,
): Promise<{ events: StreamEvent[]; comments: SseComment[] }> {
  const events: StreamEvent[] = []
  const comments: SseComment[] = []
  if (!response.body) throw new Error('no body')
  for await (const frame of decodeSse(response.body)) {
    if (frame.type === 'comment') comments.push(frame)
    else events.push(...parser.parseStreamEvent(frame))
  }
  events.push(...parser.end())
  return { events, comments }
}

/** The text a stream spelled out, joined. */
export function textOf(events: readonly StreamEvent[]): string {
  return events.map((e) => (e.type === 'text' ? e.text : '')).join('')
}
