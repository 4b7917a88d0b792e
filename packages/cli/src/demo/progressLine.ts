import type { Io } from '../Command.js'

/**
 * A progress line on stderr, redrawn in place with `\r` — only on a terminal,
 * so piped or captured output (tests, CI logs) stays clean.
 */
export function progressLine(io: Io): { update(text: string): void; clear(): void } {
  let width = 0
  return {
    update(text) {
      if (!io.stderrIsTTY) return
      const line = text.slice(0, 79)
      io.stderr(`\r${line.padEnd(width)}`)
      width = line.length
    },
    clear() {
      if (!io.stderrIsTTY || width === 0) return
      io.stderr(`\r${' '.repeat(width)}\r`)
      width = 0
    },
  }
}
