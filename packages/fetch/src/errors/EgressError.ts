import { HourglassError } from '@hourglass/core'

/** The phase of an outbound call: name lookup, TCP+TLS, time to first byte, body reading. */
export type EgressPhase = 'dns' | 'connect' | 'headers' | 'body'

export interface EgressErrorDetails {
  /** ms from the start of the attempt to the failure. */
  elapsedMs: number
  /** Response bytes (headers excluded) received before the failure. */
  bytesReceived?: number
  /** The phase's limit that ran out, ms (for timeouts). */
  limitMs?: number
  cause?: unknown
}

/** The base of every outbound-phase failure: which phase, how long in, how many bytes had arrived. */
export class EgressError extends HourglassError {
  static override readonly errorName: string = 'EgressError'
  readonly phase: EgressPhase
  readonly elapsedMs: number
  readonly bytesReceived: number
  readonly limitMs: number | undefined

  constructor(code: string, phase: EgressPhase, message: string, details: EgressErrorDetails) {
    super(
      code,
      `${message} (${Math.round(details.elapsedMs)} ms into the attempt)`,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.phase = phase
    this.elapsedMs = Math.round(details.elapsedMs)
    this.bytesReceived = details.bytesReceived ?? 0
    this.limitMs = details.limitMs
  }
}
