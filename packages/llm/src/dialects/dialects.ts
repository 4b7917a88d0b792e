import type { ChatRequest, NormalizedError } from '../types.js'
import { normalizeAnthropicError, normalizeAnthropicStreamError } from './anthropic/errors.js'
import { buildAnthropicRequest } from './anthropic/request.js'
import { ANTHROPIC_REQUEST_ID_HEADERS, parseAnthropicResponse } from './anthropic/response.js'
import { createAnthropicStreamParser } from './anthropic/stream.js'
import type { Dialect, DialectName } from './Dialect.js'
import { normalizeDoubaoError, normalizeDoubaoStreamError } from './doubao/errors.js'
import type { ErrorInput, StreamErrorInput } from './ErrorInput.js'
import { withEmptyArgumentsAsObject } from './emptyToolArguments.js'
import { normalizeErnieError, normalizeErnieStreamError } from './ernie/errors.js'
import { normalizeGeminiError, normalizeGeminiStreamError } from './gemini/errors.js'
import { buildGeminiRequest } from './gemini/request.js'
import { parseGeminiResponse } from './gemini/response.js'
import { createGeminiStreamParser } from './gemini/stream.js'
import { normalizeDeepSeekError, normalizeDeepSeekStreamError } from './openai/errors.js'
import { normalizeOpenAIError, normalizeOpenAIStreamError } from './openai/normalizeOpenAIError.js'
import { refuseReasoningSampling } from './openai/refuseReasoningSampling.js'
import { buildOpenAIRequest } from './openai/request.js'
import { parseOpenAIResponse } from './openai/response.js'
import { createOpenAIStreamParser } from './openai/stream.js'
import { normalizeQwenError, normalizeQwenStreamError } from './qwen/errors.js'
import { refuseDeepSeekFields } from './refuseDeepSeekFields.js'

/**
 * DeepSeek's answers name themselves by `x-ds-trace-id` (api.deepseek.com
 * sends no `x-request-id`); a proxy in front of it may send `x-request-id` alone.
 */
const DEEPSEEK_REQUEST_ID_HEADERS: readonly string[] = Object.freeze([
  'x-ds-trace-id',
  'x-request-id',
])

/**
 * The OpenAI-compatible providers share OpenAI's translation; only their
 * errors differ, which is where production incidents hide.
 */
function openAICompatible(
  name: DialectName,
  normalizeError: (input: ErrorInput) => NormalizedError | undefined,
  normalizeStreamError: (frame: StreamErrorInput) => NormalizedError | undefined,
  refuseFields?: (request: ChatRequest) => void,
): Dialect {
  const maxTokensField = name === 'openai' ? 'max_completion_tokens' : 'max_tokens'
  const requestIdHeader: string | readonly string[] =
    name === 'deepseek' ? DEEPSEEK_REQUEST_ID_HEADERS : 'x-request-id'
  return {
    name,
    wire: 'openai',
    requestIdHeader,
    buildRequest: (request, model) => {
      refuseFields?.(request)
      const built = buildOpenAIRequest(request, model, { maxTokensField })
      // Last: what only OpenAI's reasoning models refuse (`provider_value`).
      // On the `openai` dialect only, whatever its base URL (OpenAI, Azure,
      // a vLLM or LiteLLM server serving a model of that name): the other
      // compatible dialects' providers name their models their own way.
      if (name === 'openai') refuseReasoningSampling(model, built.body)
      return built
    },
    ...(refuseFields === undefined ? {} : { refuseFields }),
    authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
    parseResponse: (body, meta) => parseOpenAIResponse(body, meta, name, requestIdHeader),
    // A call streamed without argument text gets `{}`, as its whole answer does.
    createStreamParser: () =>
      withEmptyArgumentsAsObject(createOpenAIStreamParser(normalizeStreamError)),
    normalizeError,
    normalizeStreamError,
  }
}

/** Every provider dialect by name. Frozen: a registry is configuration, not state. */
export const dialects: Readonly<Record<DialectName, Dialect>> = Object.freeze({
  openai: openAICompatible('openai', normalizeOpenAIError, normalizeOpenAIStreamError),
  deepseek: openAICompatible(
    'deepseek',
    normalizeDeepSeekError,
    normalizeDeepSeekStreamError,
    refuseDeepSeekFields,
  ),
  qwen: openAICompatible('qwen', normalizeQwenError, normalizeQwenStreamError),
  ernie: openAICompatible('ernie', normalizeErnieError, normalizeErnieStreamError),
  doubao: openAICompatible('doubao', normalizeDoubaoError, normalizeDoubaoStreamError),
  anthropic: {
    name: 'anthropic',
    wire: 'anthropic',
    // DeepSeek's Anthropic route names its answers by `x-ds-trace-id` alone.
    requestIdHeader: ANTHROPIC_REQUEST_ID_HEADERS,
    buildRequest: buildAnthropicRequest,
    authHeaders: (apiKey) => ({ 'x-api-key': apiKey }),
    parseResponse: parseAnthropicResponse,
    createStreamParser: createAnthropicStreamParser,
    normalizeError: normalizeAnthropicError,
    normalizeStreamError: normalizeAnthropicStreamError,
  },
  gemini: {
    name: 'gemini',
    wire: 'gemini',
    buildRequest: buildGeminiRequest,
    authHeaders: (apiKey) => ({ 'x-goog-api-key': apiKey }),
    parseResponse: parseGeminiResponse,
    createStreamParser: createGeminiStreamParser,
    normalizeError: normalizeGeminiError,
    normalizeStreamError: normalizeGeminiStreamError,
  },
})

export function isDialectName(name: string): name is DialectName {
  return Object.hasOwn(dialects, name)
}
