import { HourglassError, hasErrorCode } from '@hourglass/core'
import { withoutQuery } from './withoutQuery.js'

/**
 * `probe()` had a call answered with no request it could time (no attempt
 * reached the network, or none ended). Refused rather than reported: its
 * figures would be read off no sample — before, a `TypeError` ("Cannot read
 * properties of undefined (reading 'medianMs')").
 */
export class ProbeNoSampleError extends HourglassError {
  static override readonly errorName: string = 'ProbeNoSampleError'
  static readonly code = 'PROBE_NO_SAMPLE'

  constructor(url: string) {
    super(
      ProbeNoSampleError.code,
      `probe: ${withoutQuery(url)} was answered with no request to time: no sample was taken`,
    )
  }
}

export function isProbeNoSample(error: unknown): error is ProbeNoSampleError {
  return hasErrorCode(error, ProbeNoSampleError.code)
}
