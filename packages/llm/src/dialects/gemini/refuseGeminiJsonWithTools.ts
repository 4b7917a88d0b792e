import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'
import { geminiVersion } from './geminiVersion.js'

/**
 * A JSON `response_format` (`json_object`, `json_schema`: `responseMimeType:
 * "application/json"`) beside tools to a Gemini model before 3 throws
 * naming the field and the model: those models answer 400 INVALID_ARGUMENT
 * "Function calling with a response mime type: 'application/json' is
 * unsupported" (1.5 Flash: google-gemini/deprecated-generative-ai-python#515;
 * 2.5 Flash: symfony/ai#1777; 2.5 Flash-Lite: analyticalrohit/ai-blog-generator#17;
 * googleapis/python-genai#867), a bad request no fallback follows — and the
 * OpenAI Agents SDK sends both whenever an agent has an `output_type` and
 * tools (openai/openai-agents-python#656). Gemini 3 takes them together (its
 * developer guide, "Structured Outputs with tools"). Not dropped: the caller
 * asked for JSON, or for tools, the model would not give.
 *
 * Not refused beside `tool_choice: "none"` (`functionCallingConfig.mode:
 * NONE`): no function can be called, and Gemini 2.5 Pro answers it
 * (google/adk-python#5735). A name that says no version (a tuned model)
 * goes as before. A value only these models refuse (`provider_value`), so
 * called after every other check of the request, as `refuseGeminiPenalties`.
 */
export function refuseGeminiJsonWithTools(model: string, body: Record<string, unknown>): void {
  if (body['tools'] === undefined) return
  const config = body['generationConfig'] as Record<string, unknown>
  if (config['responseMimeType'] !== 'application/json') return
  const calling = body['toolConfig'] as { functionCallingConfig?: { mode?: unknown } } | undefined
  if (calling?.functionCallingConfig?.mode === 'NONE') return
  const version = geminiVersion(model)
  if (version === undefined || version.major >= 3) return
  throw new InvalidChatRequestError(
    'response_format',
    `${model} cannot call tools and answer in JSON in one request (Gemini before 3 answers "Function calling with a response mime type: 'application/json' is unsupported"): leave response_format or the tools out, or use Gemini 3, which takes both`,
    PROVIDER_REFUSES_VALUE,
  )
}
