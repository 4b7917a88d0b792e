import { isGatewayConfigError, parseGatewayConfig } from '../../src/index.js'

/**
 * The problems `parseGatewayConfig` finds in a config, as `field: message`
 * lines (none when it is valid); any error but a `GatewayConfigError` is thrown.
 */
export function configProblems(input: unknown, env: Record<string, string> = {}): string[] {
  try {
    parseGatewayConfig(input, { env })
  } catch (error) {
    if (!isGatewayConfigError(error)) throw error
    return error.problems.map((p) => `${p.field}: ${p.message}`)
  }
  return []
}
