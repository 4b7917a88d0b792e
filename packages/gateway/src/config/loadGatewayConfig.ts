import { open } from 'node:fs/promises'
import { refuseUnknownGatewayOptions } from '../refuseUnknownGatewayOptions.js'
import { duplicateJsonKeys } from './duplicateJsonKeys.js'
import {
  type ConfigProblem,
  GatewayConfigError,
  isGatewayConfigError,
} from './GatewayConfigError.js'
import type { GatewayConfig } from './gatewayConfigSchema.js'
import { type ParseGatewayConfigOptions, parseGatewayConfig } from './parseGatewayConfig.js'

/** Every option `loadGatewayConfig` reads: the parser's, but `file` (the path is named). */
const LOAD_OPTION_NAMES = Object.keys({ env: true } satisfies Record<
  keyof Omit<ParseGatewayConfigOptions, 'file'>,
  true
>)

/**
 * The most a config file may hold: 1 MiB. A config is a few kilobytes (the
 * README's, two providers and a model, is 0.5 KB: one a thousand times as
 * large still fits); a file past it is the wrong one — a log, a dump,
 * `/dev/zero` — and read whole it grew the heap until the process died,
 * with no message.
 */
const MAX_CONFIG_BYTES = 1024 * 1024

/**
 * Reads a JSON config file (at most 1 MiB) and validates it. Unreadable or
 * larger files and JSON syntax errors are `GatewayConfigError`s too (field
 * `(file)` / `(json)`), so a CLI can print one kind of error and exit.
 */
export async function loadGatewayConfig(
  path: string,
  options: Omit<ParseGatewayConfigOptions, 'file'> = {},
): Promise<GatewayConfig> {
  // Before the file is read; `file` too, which the path replaces.
  refuseUnknownGatewayOptions(options, LOAD_OPTION_NAMES, 'loadGatewayConfig()')
  let text: string | undefined
  try {
    text = await readAtMost(path, MAX_CONFIG_BYTES)
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
  if (text === undefined) {
    throw new GatewayConfigError(
      [
        {
          field: '(file)',
          message: `larger than 1 MiB (${MAX_CONFIG_BYTES} bytes), the most a config may be: is it the right file?`,
        },
      ],
      { file: path },
    )
  }
  // A UTF-8 byte order mark, as Windows editors save: not JSON, but not the
  // user's mistake either (the file is otherwise valid).
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  // Empty (a touched path, a mount that came up empty): JSON.parse says
  // only "Unexpected end of JSON input", which names no position.
  if (text.trim() === '') {
    throw new GatewayConfigError(
      [{ field: '(json)', message: 'the file is empty: a gateway config is one JSON object' }],
      { file: path },
    )
  }
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
  // JSON.parse keeps a key written twice silently (the last wins): a copied
  // provider block not renamed replaced the first, and the config loaded.
  const duplicates = duplicateJsonKeys(text)
  if (duplicates.length === 0) return parseGatewayConfig(json, { ...options, file: path })
  // Reported with the config's other problems, in one run.
  let others: ConfigProblem[] = []
  try {
    parseGatewayConfig(json, { ...options, file: path })
  } catch (error) {
    if (!isGatewayConfigError(error)) throw error
    others = error.problems
  }
  throw new GatewayConfigError([...duplicates, ...others], { file: path })
}

function jsonPosition(cause: unknown): string {
  const message = cause instanceof Error ? cause.message : ''
  const match = /position (\d+)/.exec(message)
  if (match) return ` (at character ${match[1]})`
  // A file cut short (a write interrupted): V8 names no position for it.
  return /end of JSON input/.test(message) ? ' (it ends before its last value is closed)' : ''
}

/**
 * The file's text, or undefined when it holds more than `maxBytes`: read
 * until then, never further (a device or a pipe may not end), whatever its
 * size says (a device's and a pipe's say 0).
 */
async function readAtMost(path: string, maxBytes: number): Promise<string | undefined> {
  const file = await open(path, 'r')
  try {
    // One byte more than allowed: reading it says the file is too large.
    const buffer = Buffer.alloc(maxBytes + 1)
    let filled = 0
    while (filled < buffer.length) {
      const { bytesRead } = await file.read(buffer, filled, buffer.length - filled, null)
      if (bytesRead === 0) return buffer.toString('utf8', 0, filled)
      filled += bytesRead
    }
    return undefined
  } finally {
    await file.close()
  }
}
