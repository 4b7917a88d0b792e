import { HourglassError, hasErrorCode } from '@hourglass/core'

export const GATEWAY_CONFIG_INVALID = 'GATEWAY_CONFIG_INVALID'

/** One problem in a config, at a field path such as `providers.qwen.apiKeys[1]`. */
export interface ConfigProblem {
  /** `providers.qwen.apiKeys[1]`; `(root)` for the file as a whole. */
  field: string
  message: string
}

/**
 * The gateway config is not valid. The message lists every problem as
 * `field: what is wrong`, one per line, so a typo names the field at start-up
 * instead of surfacing as a 500 on the first request. Key values are never
 * quoted back.
 */
export class GatewayConfigError extends HourglassError {
  static override readonly errorName: string = 'GatewayConfigError'
  static readonly code = GATEWAY_CONFIG_INVALID
  readonly problems: ConfigProblem[]
  /** The file the config came from, when loaded from one. */
  readonly file: string | undefined

  constructor(
    problems: ConfigProblem[],
    options: { file?: string | undefined; cause?: unknown } = {},
  ) {
    const where = options.file === undefined ? 'gateway config' : `gateway config ${options.file}`
    super(
      GATEWAY_CONFIG_INVALID,
      `${where} is invalid:\n${problems.map((p) => `  ${p.field}: ${p.message}`).join('\n')}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    )
    this.problems = problems
    this.file = options.file
  }
}

export function isGatewayConfigError(error: unknown): error is GatewayConfigError {
  return hasErrorCode(error, GATEWAY_CONFIG_INVALID)
}
