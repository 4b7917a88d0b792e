import { InvalidChatRequestError } from '../../errors/InvalidChatRequestError.js'
import type { Logprobs } from '../../types.js'
import { asArray, asRecord, get, getNumber, getString } from '../safeJson.js'

/**
 * OpenAI's `logprobs` / `top_logprobs` → `generationConfig.responseLogprobs`
 * / `generationConfig.logprobs` (the number of top candidates per decoding
 * step, 0–20 as OpenAI's: ai.google.dev/api/generate-content#generationconfig,
 * "Only valid if responseLogprobs=True"). `top_logprobs` without
 * `logprobs: true` throws, as OpenAI answers it 400 and Gemini would, but
 * for `0`, which then asks for nothing; beside it, `0` asks for no
 * alternatives, which is what `responseLogprobs` alone gives.
 */
export function applyGeminiLogprobs(
  extra: Record<string, unknown>,
  generationConfig: Record<string, unknown>,
): void {
  // Any other value throws naming it, as every field of `extra` a dialect
  // reads: `logprobs: 5` (the legacy Completions style) or `'true'` was
  // sent as nothing, and a `top_logprobs` of `'3'` or -1 lost the
  // alternatives without a word.
  const logprobs = extra['logprobs']
  if (logprobs !== undefined && logprobs !== null && typeof logprobs !== 'boolean') {
    throw new InvalidChatRequestError('logprobs', 'expected true or false')
  }
  const asked = logprobs === true
  if (asked) generationConfig['responseLogprobs'] = true
  const top = extra['top_logprobs']
  if (top === undefined || top === null) return
  // 0 alternatives without the tokens' own asks for nothing at all: what a
  // client filling in OpenAI's fields sends beside `logprobs: false`.
  if (!asked && top === 0) return
  if (!asked) {
    throw new InvalidChatRequestError(
      'top_logprobs',
      'Gemini takes it only beside logprobs: true (OpenAI answers 400 without it)',
    )
  }
  if (!Number.isInteger(top) || (top as number) < 0 || (top as number) > 20) {
    throw new InvalidChatRequestError('top_logprobs', 'expected a whole number from 0 to 20')
  }
  if ((top as number) > 0) generationConfig['logprobs'] = top
}

/**
 * A candidate's `logprobsResult` (`chosenCandidates[]` and `topCandidates[]`,
 * one entry per decoding step, each `{ token, tokenId, logProbability }`) →
 * OpenAI's `logprobs.content` (`{ token, logprob, bytes, top_logprobs }`,
 * `bytes` the token's UTF-8), so an OpenAI client reads Gemini's as it reads
 * OpenAI's. `into` joins a stream's chunks, each holding its own tokens':
 * appended in place, as the OpenAI dialect's are (a copy per chunk made a
 * stream's cost the square of its tokens). No result: `into` as it is.
 */
export function geminiLogprobs(result: unknown, into?: Logprobs): Logprobs | undefined {
  if (asRecord(result) === undefined) return into
  const out = into ?? { content: null, refusal: null }
  out.content ??= []
  const content = out.content
  const top = asArray(get(result, 'topCandidates'))
  asArray(get(result, 'chosenCandidates')).forEach((chosen, step) => {
    content.push({
      ...tokenLogprob(chosen),
      top_logprobs: asArray(get(top[step], 'candidates')).map(tokenLogprob),
    })
  })
  return out
}

const utf8 = new TextEncoder()

/** One Gemini `Candidate` → OpenAI's `{ token, logprob, bytes }`. */
function tokenLogprob(candidate: unknown): { token: string; logprob: number; bytes: number[] } {
  const token = getString(candidate, 'token') ?? ''
  return {
    token,
    // proto3 JSON leaves a zero out: a token of probability 1 has none.
    logprob: getNumber(candidate, 'logProbability') ?? 0,
    bytes: Array.from(utf8.encode(token)),
  }
}
