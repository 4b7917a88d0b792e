import { checkUsage } from './checkUsage.js'
import type { ErrorReply, HangReply, TextReply } from './types.js'

/** Builders for the three kinds of scripted reply. */
export const reply = {
  /** A generated answer (JSON or SSE, as the request asked). */
  text(text: string, options: Omit<TextReply, 'kind' | 'text'> = {}): TextReply {
    checkUsage('reply.text()', options.usage)
    return { ...options, kind: 'text', text }
  },
  /** Any status, body and headers, verbatim. */
  error(
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
    options: { latencyMs?: number } = {},
  ): ErrorReply {
    return { kind: 'error', status, body, headers, ...options }
  },
  /** No answer at all, or (with `afterHeaders`) a 200 stream that never sends a token. */
  hang(options: Omit<HangReply, 'kind'> = {}): HangReply {
    return { ...options, kind: 'hang' }
  },
}
