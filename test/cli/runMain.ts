import { main } from '@hourglass/cli'

/**
 * `main(argv, io)` is what the `hourglass` bin runs with process.argv:
 * argument and config cases are judged on it in this process (a child
 * process per case cost 0.4–1 s of CPU each), and a few go through the real
 * bin to show the exit code and stderr reach the shell unchanged. Only for
 * runs that end before anything listens or installs signal handlers.
 */
export async function runMain(
  argv: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await main(argv, {
    stdout: (text) => {
      stdout += text
    },
    stderr: (text) => {
      stderr += text
    },
    stderrIsTTY: false,
  })
  return { code, stdout, stderr }
}
