/** The index of the `"` that ends the string whose text starts at `from`, or -1. */
export function closingQuote(text: string, from: number): number {
  let at = text.indexOf('"', from)
  while (at !== -1) {
    // Escaped when an odd number of backslashes stands before it.
    let slashes = 0
    while (text.charCodeAt(at - 1 - slashes) === 0x5c) slashes++
    if (slashes % 2 === 0) return at
    at = text.indexOf('"', at + 1)
  }
  return -1
}
