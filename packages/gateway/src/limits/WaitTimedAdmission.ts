import { Admission, type AdmissionOptions } from '../llm.js'
import { clientTimeoutBound } from './clientTimeoutBound.js'

/**
 * The gateway's `Admission`, telling `ended` when each `acquire` settles:
 * a wait it took (a cooldown, an RPM/TPM window) lasted until then, or until
 * admission decided anew (its next channel message), not as long as it was
 * planned — the caller may leave or its deadline end meanwhile, and a
 * cooldown reopened early ends it sooner. The metrics' wait histogram
 * records what was waited (`GatewayMetrics.waitEnded`). One frame per
 * attempt, nothing per byte. A wait is taken only while the request can
 * still be answered before the client's own timeout (`clientTimeoutBound`).
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
    const bound = clientTimeoutBound(request.deadline, this.#replyReserveMs)
    try {
      // A copy: the caller's object is its own.
      return await super.acquire(
        bound === undefined ? request : Object.assign({}, request, { deadline: bound }),
      )
    } finally {
      bound?.dispose()
      this.#ended()
    }
  }
}
