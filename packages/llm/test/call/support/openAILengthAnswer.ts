import { parseOpenAIResponse } from '../../../src/dialects/openai/response.js'
import type { ChatResponse } from '../../../src/types.js'

/**
 * A whole OpenAI answer stopped at its token limit (`finish_reason:
 * length`), its tool calls `send_email` with the argument text given: `''`
 * is a call cut right after its name, which the parser reads `{}` and marks
 * as the call whose end did not come.
 */
export function openAILengthAnswer(calls: Array<{ id: string; arguments: string }>): ChatResponse {
  return parseOpenAIResponse({
    id: 'r',
    model: 'm',
    choices: [
      {
        index: 0,
        finish_reason: 'length',
        message: {
          role: 'assistant',
          content: null,
          tool_calls: calls.map((call) => ({
            id: call.id,
            type: 'function',
            function: { name: 'send_email', arguments: call.arguments },
          })),
        },
      },
    ],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  })
}
