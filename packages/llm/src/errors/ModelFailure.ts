/** Why one model of the fallback list gave up. */
export interface ModelFailure {
  model: string
  provider: string
  /** Attempts sent to this model, across the call (a return to it counts on). */
  attempts: number
  /** The last error this model returned (or the reason no attempt was sent). */
  cause: unknown
  /** Why the policy stopped on this model (`"attempts exhausted (3 of 3)"`, …). */
  reason: string
}

/**
 * The models tried, for an error's message: `provider/model: reason`, in the
 * order each gave up. One format for every error that carries them, so a log search
 * for a model finds it whichever error the call ended with.
 */
export function describeFailures(causes: readonly ModelFailure[]): string {
  return causes.map((c) => `${c.provider}/${c.model}: ${c.reason}`).join('; ')
}
