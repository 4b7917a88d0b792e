let serving = false

/**
 * Said by a command that serves until a signal stops it (`gateway`, `demo
 * --serve`): what it prints on stdout — its address, curl commands to try —
 * is a notice, not the result it exists for (a probe's report is). A stdout
 * that cannot take it (a full disk, an I/O error) is still said in one line
 * on stderr, but a clean stop keeps its exit code: a gateway that served
 * and drained was reported failed (exit 1) to its supervisor for a line
 * nobody needed.
 */
export function servesUntilStopped(): void {
  serving = true
}

/** Whether the command said `servesUntilStopped`. */
export function isServingUntilStopped(): boolean {
  return serving
}
