/** One Anthropic SSE event: `event: <type>`, its data `{ type, ...data }`. */
export const anthropicEvent = (type: string, data: Record<string, unknown>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

interface MessageStart {
  /** The provider's id of the answer; `msg_1` unless given. */
  id?: string
  model: string
  inputTokens: number
  /** The running output count; 1 (Anthropic's placeholder) unless given. */
  outputTokens?: number
}

/** Anthropic's first event: the answer's id, and its input as counted. */
export const anthropicMessageStart = ({
  id = 'msg_1',
  model,
  inputTokens,
  outputTokens = 1,
}: MessageStart): string =>
  anthropicEvent('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      content: [],
      model,
      stop_reason: null,
      usage: { input_tokens: inputTokens, output_tokens: outputTokens },
    },
  })

/** The opening of an Anthropic text answer: `message_start`, a text block, and its first delta, `text`. */
export const anthropicTextOpening = (start: MessageStart & { text: string }): string =>
  anthropicMessageStart(start) +
  anthropicEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
  anthropicEvent('content_block_delta', {
    index: 0,
    delta: { type: 'text_delta', text: start.text },
  })
