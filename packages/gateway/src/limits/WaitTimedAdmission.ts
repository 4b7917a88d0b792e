import { Admission, type AdmissionOptions } from '../llm.js'

/**
 * The gateway's `Admission`, telling `ended` when each `acquire` settles:
 * a wait it took (a cooldown, an RPM/TPM window) lasted until then, or until
 * admission decided anew (its next channel message), not as long as it was
 * planned — the caller may leave or its deadline end meanwhile, and a
 * cooldown reopened early ends it sooner. The metrics' wait histogram
 * records what was waited (`GatewayMetrics.waitEnded`). One frame per
 * attempt, nothing per byte.
 */
export class WaitTimedAdmission extends Admission {
  readonly #ended: () => void

  constructor(options: AdmissionOptions, ended: () => void) {
    super(options)
    this.#ended = ended
  }

  override async acquire(
    ...args: Parameters<Admission['acquire']>
  ): ReturnType<Admission['acquire']> {
    try {
      return await super.acquire(...args)
    } finally {
      this.#ended()
    }
  }
}
