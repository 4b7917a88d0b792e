/** Where a command writes: injectable, so tests can run commands in-process. */
export interface Io {
  stdout: (text: string) => void
  stderr: (text: string) => void
  /** Whether stderr is a terminal (progress lines are redrawn in place only then). */
  stderrIsTTY: boolean
  /** The terminal's width in columns, read when a line is drawn (it may be resized); undefined when unknown. */
  stderrColumns?: (() => number | undefined) | undefined
}

/** One `hourglass <name>` command. Its `run` returns the exit code. */
export interface Command {
  name: string
  summary: string
  /** The full `--help` text. */
  help: string
  run(args: string[], io: Io): Promise<number>
}

export const processIo = (): Io => ({
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stderrIsTTY: process.stderr.isTTY === true,
  stderrColumns: () => process.stderr.columns,
})
