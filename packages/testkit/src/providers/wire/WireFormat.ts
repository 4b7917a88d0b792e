import type { GeneratedParts } from '../outputLimits.js'
import type { ProviderDialect, ScriptedStreamError } from '../types.js'

/** One write of a stream. `token` frames carry generated text and are what pacing and cuts count. */
export interface Frame {
  text: string
  token?: boolean
  /**
   * The first frame that tells the client the answer is complete (a finish
   * reason, `message_delta`, `is_end`). A scripted stream error never comes
   * at or after it: an error after the whole answer tests nothing.
   */
  finish?: boolean
  /**
   * The frame that closes the text (Anthropic's text block's
   * `content_block_stop`, before the answer's finish). A model cannot know
   * its text is over before it writes the token that completes a stop
   * sequence, so those tokens come before this frame, not only before the
   * finish.
   */
  endsText?: boolean
  /**
   * A frame that carries the answer's last token and its finish at once
   * (Gemini's last text chunk, with its STOP). A stream an error breaks
   * never finishes, yet its last token must go out: the frame's `finished`
   * JSON (inside an `alt=sse` event or as a JSON array's element alike) is
   * then replaced by `sent`, the chunk as it goes mid-answer — no
   * finishReason, the running usage. Without it the error took the last
   * text's place: fewer tokens than `afterTokens` went out.
   */
  unfinished?: { readonly finished: string; readonly sent: string }
}

/** A scripted answer, resolved: everything a wire format needs to render it. */
export interface AnswerPlan {
  dialect: ProviderDialect
  model: string
  /** Response id in the provider's style. */
  id: string
  /** Epoch seconds. */
  created: number
  thinkingTokens: string[]
  signature: string | undefined
  /**
   * Anthropic: the thinking's text is sent (`thinking.display`, or the
   * model's default); else its block comes with `thinking: ""` and the
   * signature, the thinking generated (paced, counted) all the same.
   * Undefined: sent.
   */
  thinkingShown?: boolean
  textTokens: string[]
  /** `cut`: the request's token cap stopped it inside its arguments (`argumentsJson` is what was written). */
  toolCalls: GeneratedParts['toolCalls']
  finishReason: 'stop' | 'length' | 'tool_calls' | 'content_filter'
  /** The request's stop sequence that ended the text (Anthropic names it in `stop_sequence`). */
  stopSequence?: string | undefined
  /**
   * Tokens generated after the last one sent, before the answer finished:
   * those that wrote the stop sequence (billed, not sent). 0 otherwise.
   */
  unsentStopTokens?: number
  /** Every input token, the cache's included. */
  inputTokens: number
  outputTokens: number
  /** Parts of `inputTokens` read from and written to the prompt cache (0: none reported). */
  cachedInputTokens: number
  cacheCreationInputTokens: number
  /**
   * Anthropic: whether a tool's input streams piece by piece as generated
   * (fine-grained); else a parameter at a time. Undefined: every tool's does.
   */
  streamsInputEagerly?: (toolName: string) => boolean
  /** OpenAI: the request asked for `stream_options.include_usage`. */
  includeUsage: boolean
  /**
   * Gemini: the request set `generationConfig.thinkingConfig.includeThoughts:
   * true`; without it the thinking is generated and counted but not sent.
   */
  includeThoughts?: boolean
  /**
   * The request asked for log probabilities, and how many top candidates per
   * token: Gemini's `generationConfig.responseLogprobs: true` (its
   * `generationConfig.logprobs`), Chat Completions' `logprobs: true` (its
   * `top_logprobs`, 0–20); 0 when unset. Undefined: none asked (no
   * `logprobsResult`, `logprobs: null`).
   */
  logprobs?: number | undefined
  /**
   * OpenAI dialect: its stream pads each chunk with `obfuscation` — unless
   * the request set `stream_options.include_obfuscation: false`.
   */
  obfuscation?: boolean
  /**
   * OpenAI: the tier that serves the answer — the request's `priority`,
   * `flex` or `scale`, else `default` (what `auto`, `default` or none get;
   * also when left out).
   */
  serviceTier?: string
}

/** How one provider API renders an answer, as JSON and as a stream. */
export interface WireFormat {
  /** Prefix of generated tool-call ids. */
  toolIdPrefix: string
  /** Prefix of generated response ids. */
  idPrefix: string
  streamContentType: string
  json(plan: AnswerPlan): unknown
  frames(plan: AnswerPlan): Frame[]
  /** The frame for an error inside a 200 stream, after `framesBefore` frames of the answer. */
  errorFrame(error: ScriptedStreamError, plan: AnswerPlan, framesBefore: number): string
}
