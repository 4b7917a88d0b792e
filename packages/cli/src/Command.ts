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

/** The `Io`s `processIo` made: writing to them is writing to the process's own streams. */
const ownStreams = new WeakSet<Io>()

export const processIo = (): Io => {
  const io: Io = {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stderrIsTTY: process.stderr.isTTY === true,
    stderrColumns: () => process.stderr.columns,
  }
  ownStreams.add(io)
  return io
}

/**
 * Whether `io` writes to the process's own streams (`processIo`, as the
 * binary runs): a writer of its own (pino's to fd 2) may bypass it. Any
 * other `io` is a caller's (`main(argv, io)`), and gets every line.
 */
export function isProcessIo(io: Io): boolean {
  return ownStreams.has(io)
}
