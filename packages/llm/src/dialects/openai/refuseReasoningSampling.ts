import {
  InvalidChatRequestError,
  PROVIDER_REFUSES_VALUE,
} from '../../errors/InvalidChatRequestError.js'

/**
 * What OpenAI's reasoning models refuse of the sampling settings the other
 * models take (`provider_value`; stop sequences too, below), each a 400 that
 * goes to no fallback:
 * "Unsupported value: 'temperature' does not support 0.2 with this model.
 * Only the default (1) value is supported." (`param: "temperature"`;
 * OpenHands/OpenHands#4131 for o1-mini, QwenLM/qwen-code#921 for
 * gpt-5-mini), the same of `top_p`, `logprobs` ("only supported with
 * reasoning effort none", OpenAI's GPT-5.1 and 5.2 guide; vercel/ai#10932)
 * and a presence or frequency penalty ("Unsupported parameter:
 * 'presence_penalty' is not supported with this model.", gpt-5-mini:
 * nextai-translator/nextai-translator#1781).
 * Refused before sending, naming the field and the model, never dropped (as
 * LangChain and the Vercel AI SDK do): the caller asked for a sampling the
 * model would not do. A value that asks for the default (`temperature: 1`,
 * `top_p: 1`, `logprobs: false`, a penalty of 0, which LangChain's
 * ChatOpenAI sends on every request) asks for what the model does anyway
 * and is not sent.
 *
 * Called last, after every other check of the request, as Anthropic's
 * `refuseModelSampling`: thrown first, a refusal a gateway skips for a
 * fallback entry hid the request's own refusals from it.
 */
export function refuseReasoningSampling(model: string, body: Record<string, unknown>): void {
  if (!reasons(model, body['reasoning_effort'])) return
  for (const [field, neutral] of NEUTRAL) {
    const value = body[field]
    if (value === undefined || value === null) continue
    if (value === neutral) {
      delete body[field]
      continue
    }
    throw new InvalidChatRequestError(
      field,
      `${model} takes no ${field} but its default, ${neutral}, while it reasons (OpenAI's reasoning models), got ${String(value)}: leave it out${
        canTurnOff(model) ? ', or send reasoning_effort "none"' : ''
      }`,
      PROVIDER_REFUSES_VALUE,
    )
  }
  // Stop sequences have no default to leave out: o1-mini, o3, o4-mini and GPT-5
  // answer any 400 "Unsupported parameter: 'stop' is not supported with this
  // model." (`param: "stop"`; langchain-ai/langchain#26433 for o1-mini and
  // o1-preview, crewAIInc/crewAI#2738 for o3, huggingface/smolagents#1211 for
  // o4-mini, crewAIInc/crewAI#4149 for gpt-5.1 reasoning), and a GPT-5.x with
  // the `none` effort takes them (BerriAI/litellm#28662). o3-mini takes them
  // (huggingface/smolagents#2366), and so may o1 itself (OpenAI's reference
  // names "the latest reasoning models o3 and o4-mini"): a false refusal is
  // worse, so it goes. Agent frameworks send `stop` on every
  // request (a ReAct "Observation:"), so a reasoning model that is a
  // fallback would be sent a request it refuses.
  const stop = body['stop']
  if (stop !== undefined && stop !== null && !TAKES_STOP.test(model)) {
    throw new InvalidChatRequestError(
      'stop',
      `${model} takes no stop sequences while it reasons (OpenAI's reasoning models answer 400 "Unsupported parameter: 'stop'"): leave it out${
        canTurnOff(model) ? ', or send reasoning_effort "none"' : ''
      }`,
      PROVIDER_REFUSES_VALUE,
    )
  }
}

/** The reasoning models that take stop sequences: o3-mini (and its snapshots), o1 (and its dated ones). */
const TAKES_STOP = /^(?:o3-mini(?:-|$)|o1(?:-\d{4}-\d{2}-\d{2})?$)/

/** Each field's default: the one value the reasoning models take. */
const NEUTRAL = [
  ['temperature', 1],
  ['top_p', 1],
  ['logprobs', false],
  ['presence_penalty', 0],
  ['frequency_penalty', 0],
] as const

/**
 * Whether `model` reasons on this request, by its name and the
 * `reasoning_effort` sent:
 * - the o-series (`o1`, `o3-mini`, `o4-mini-2025-04-16`) and GPT-5
 *   (`gpt-5`, `gpt-5-mini`, `gpt-5-nano-2025-08-07`), which always do;
 * - a GPT-5.x Pro or Codex model (`gpt-5.2-pro`, `gpt-5.1-codex-max`), which
 *   has no `none` effort (community.openai.com, "Compatibility Matrix:
 *   Reasoning models - Effort");
 * - any other GPT-5.x model with an effort but `none`; GPT-5.x from 5.5 on
 *   without one too, whose default is `medium` (a live probe in
 *   BerriAI/litellm-docs#1064: `gpt-5.5` refuses `temperature: 0` unasked,
 *   `gpt-5.1` and `gpt-5.2`, whose default is `none`, take it).
 * The `-chat` models take sampling settings (BerriAI/litellm#13781), and so
 * does a name llm does not know: GPT-5.3 and 5.4 unasked, GPT-6 (not yet
 * read here: its models differ, and a false refusal is worse), an Azure
 * deployment, a router's `openai/gpt-5` (OpenRouter drops what a model
 * does not take).
 */
function reasons(model: string, effort: unknown): boolean {
  if (/^o\d+(?:-|$)/.test(model)) return true
  const match = /^gpt-5(?:\.(\d+))?(-.*)?$/.exec(model)
  if (match === null) return false
  const [, minor, rest = ''] = match
  if (/-chat(?:-|$)/.test(rest)) return false
  if (minor === undefined || !canTurnOff(model)) return true
  if (effort !== undefined && effort !== null) return effort !== 'none'
  return Number(minor) >= 5
}

/** A GPT-5.x model (not 5.0) but a Pro or Codex one has the `none` effort. */
function canTurnOff(model: string): boolean {
  return /^gpt-5\.\d+/.test(model) && !/-(?:pro|codex)(?:-|$)/.test(model)
}
