import type { Io } from './Command.js'

/**
 * A progress line on stderr, redrawn in place with `\r` — only on a terminal,
 * so piped or captured output (tests, CI logs) stays clean.
 */
export function progressLine(io: Io): { update(text: string): void; clear(): void } {
  let width = 0
  return {
    update(text) {
      if (!io.stderrIsTTY) return
      // One row less than the terminal is wide (80 when unknown): a line that
      // wraps cannot be redrawn with `\r`, which goes back to the start of
      // its last row only, and the rows above it piled up. A terminal that
      // reports 0 columns (a pty sized 0×0: `script`, `docker exec -t` before
      // its resize) does not know its width either; taken at its word, every
      // redraw was cut to one character.
      const reported = io.stderrColumns?.()
      const columns = reported !== undefined && reported > 0 ? reported : 80
      const line = text.slice(0, Math.max(1, Math.min(79, columns - 1)))
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
