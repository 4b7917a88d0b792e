/**
 * What is known of one model's next answer, for choosing where an attempt
 * goes: the earliest expected answer wins (DESIGN, Principles).
 */
export interface ModelOutlook {
  /** Names the model in reasons: `model@provider`. */
  label: string
  /** ms before a request may be sent to it (a cooldown, a retry wait); 0 = now. */
  waitMs: number
  /** Its recent latency percentile (p90), ms; undefined = no history, assumed to answer at once. */
  latencyMs: number | undefined
}

/** When the answer is expected, in ms from now: the wait plus the usual latency (0 without history). */
export function expectedMs(outlook: ModelOutlook): number {
  return outlook.waitMs + (outlook.latencyMs ?? 0)
}

/**
 * Whether `a` is expected to answer before `b`, at the whole milliseconds
 * that reasons show (`describeOutlook`): less than a millisecond apart — two
 * forecasts of one cooldown read a moment apart, a wait rounded up to a
 * timer's whole ms — is a tie, and a tie keeps the list's order. Compared
 * to the fraction, a fallback to a model of the same cooling provider was
 * taken "before this model" with the same figure on both sides.
 */
export function answersBefore(a: ModelOutlook, b: ModelOutlook): boolean {
  return Math.ceil(expectedMs(a)) < Math.ceil(expectedMs(b))
}

/** The outlook expected to answer first; the earlier in the list on a tie. */
export function earliest(outlooks: readonly ModelOutlook[]): ModelOutlook | undefined {
  let best: ModelOutlook | undefined
  for (const outlook of outlooks) {
    if (best === undefined || expectedMs(outlook) < expectedMs(best)) best = outlook
  }
  return best
}

/** `gpt-4o@openai ~3200 ms (wait 0 ms + p90 3200 ms)`, or `… ~0 ms (ready, no latency history)`. */
export function describeOutlook(outlook: ModelOutlook): string {
  const total = fmt(expectedMs(outlook))
  const wait = outlook.waitMs > 0 ? `wait ${fmt(outlook.waitMs)} ms` : 'ready'
  const latency =
    outlook.latencyMs === undefined ? 'no latency history' : `p90 ${fmt(outlook.latencyMs)} ms`
  return `${outlook.label} ~${total} ms (${wait}, ${latency})`
}

function fmt(ms: number): string {
  return Number.isFinite(ms) ? String(Math.ceil(ms)) : '∞'
}
