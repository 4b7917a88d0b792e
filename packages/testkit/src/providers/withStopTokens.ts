import type { AnswerPlan, Frame } from './wire/WireFormat.js'

/** A token that wrote the stop sequence: paced and counted, sent as nothing. */
const STOP_TOKEN: Frame = Object.freeze({ text: '', token: true })

/**
 * A wire format's frames, with the tokens that wrote the stop sequence
 * generated before the answer finishes: paced and counted as tokens, sent
 * as nothing (as a Gemini thought not asked for is). A model writes the
 * sequence token by token and stops on the one that completes it, so the
 * finish comes that long after the last token sent (and a whole answer that
 * much later). The fake billed those tokens but sent the finish at once.
 */
export function withStopTokens(frames: Frame[], plan: AnswerPlan): Frame[] {
  const count = plan.unsentStopTokens ?? 0
  if (count === 0) return frames
  // Before the text closes (Anthropic closes its text block ahead of
  // `message_delta`), else before the finish: the sequence is the text's.
  const found = frames.findIndex((f) => f.finish === true || f.endsText === true)
  const at = found < 0 ? frames.length : found
  return [...frames.slice(0, at), ...Array<Frame>(count).fill(STOP_TOKEN), ...frames.slice(at)]
}

/**
 * How many of `frames` the wire format wrote: a wire's `errorFrame` counts
 * its own frames (Gemini's JSON array opens with the first), not these.
 */
export function wireFrameCount(frames: Frame[]): number {
  return frames.filter((f) => f !== STOP_TOKEN).length
}
