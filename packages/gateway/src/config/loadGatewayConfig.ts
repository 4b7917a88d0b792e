import { readFile } from 'node:fs/promises'
import { GatewayConfigError } from './GatewayConfigError.js'
import type { GatewayConfig } from './gatewayConfigSchema.js'
import { type ParseGatewayConfigOptions, parseGatewayConfig } from './parseGatewayConfig.js'

/**
 * Reads a JSON config file and validates it. Unreadable files and JSON syntax
 * errors are `GatewayConfigError`s too (field `(file)` / `(json)`), so a CLI
 * can print one kind of error and exit.
 */
export async function loadGatewayConfig(
  path: string,
  options: Omit<ParseGatewayConfigOptions, 'file'> = {},
): Promise<GatewayConfig> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (cause) {
    const code = (cause as { code?: unknown }).code
    throw new GatewayConfigError(
      [
        {
          field: '(file)',
          message: `cannot read it (${typeof code === 'string' ? code : 'error'})`,
        },
      ],
      { file: path, cause },
    )
  }
  // A UTF-8 byte order mark, as Windows editors save: not JSON, but not the
  // user's mistake either (the file is otherwise valid).
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (cause) {
    throw new GatewayConfigError(
      // JSON.parse quotes the text around the error, which may be a key: say where, not what.
      [{ field: '(json)', message: `not valid JSON${jsonPosition(cause)}` }],
      { file: path, cause },
    )
  }
  return parseGatewayConfig(json, { ...options, file: path })
}

function jsonPosition(cause: unknown): string {
  const match = cause instanceof Error ? /position (\d+)/.exec(cause.message) : null
  return match ? ` (at character ${match[1]})` : ''
}
