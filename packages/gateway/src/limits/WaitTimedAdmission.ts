import { Admission, type AdmissionOptions } from '../llm.js'
import { boundByClientTimeout } from './boundByClientTimeout.js'

/**
 * The gateway's `Admission`, telling `ended` when each `acquire` settles:
 * a wait it took (a cooldown, an RPM/TPM window) lasted until then, or until
 * admission decided anew (its next channel message), not as long as it was
 * planned — the caller may leave or its deadline end meanwhile, and a
 * cooldown reopened early ends it sooner. The metrics' wait histogram
 * records what was waited (`GatewayMetrics.waitEnded`). One frame per
 * attempt, nothing per byte. A wait is taken only while it ends before the
 * client's own timeout (`boundByClientTimeout`).
 */
export class WaitTimedAdmission extends Admission {
  readonly #ended: () => void
  readonly #replyReserveMs: number

  constructor(options: AdmissionOptions, ended: () => void, replyReserveMs: number) {
    super(options)
    this.#ended = ended
    this.#replyReserveMs = replyReserveMs
  }

  override async acquire(
    ...[request]: Parameters<Admission['acquire']>
  ): ReturnType<Admission['acquire']> {
    try {
      return await super.acquire(boundByClientTimeout(request, this.#replyReserveMs))
    } finally {
      this.#ended()
    }
  }
}
