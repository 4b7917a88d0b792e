/** One dispatched SSE event: whole, never a fragment. */
export interface SseMessage {
  type: 'event'
  /** The `event:` field, or undefined when the server sent none (browsers would say `message`). */
  event: string | undefined
  /** All `data:` lines of the event joined with `\n`. */
  data: string
  id: string | undefined
}

/**
 * A comment line (`: keep-alive`, DashScope's `:HTTP_STATUS/200`). Reported
 * apart from events because a comment is not progress: a first-token timer
 * must not be reset by a server that only proves it is alive.
 */
export interface SseComment {
  type: 'comment'
  /** The text after the colon, one leading space removed. */
  comment: string
}

export type SseFrame = SseMessage | SseComment
