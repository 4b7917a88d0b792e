/**
 * Which of OpenAI-shaped `messages` are the assistant's turns of a user
 * turn (the messages between two user messages) in which it called tools
 * (`tool_calls`, not empty): the turns whose thinking DeepSeek's thinking
 * mode wants back, the answer after the tool results included ("between two
 * user messages, if the model performed a tool call, the intermediate
 * assistant's reasoning_content must … be passed back",
 * api-docs.deepseek.com/guides/thinking_mode): sent with the tool-call turns
 * only, the next user turn's request was its 400 too. One rule for what
 * llm's OpenAI-compatible adapter sends back and what @hourglass/gateway
 * keeps of a client's `reasoning_content`.
 */
export function toolLoopTurns(
  messages: ReadonlyArray<{ readonly role?: unknown; readonly tool_calls?: unknown }>,
): boolean[] {
  const marks: boolean[] = new Array(messages.length).fill(false)
  let start = 0
  const close = (end: number) => {
    let called = false
    for (let i = start; i < end && !called; i++) {
      const m = messages[i]
      called = m?.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0
    }
    if (called) for (let i = start; i < end; i++) marks[i] = messages[i]?.role === 'assistant'
  }
  for (let i = 0; i < messages.length; i++) {
    if (messages[i]?.role !== 'user') continue
    close(i)
    start = i + 1
  }
  close(messages.length)
  return marks
}
