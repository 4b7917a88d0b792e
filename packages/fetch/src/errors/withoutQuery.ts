/**
 * A redirect's `Location` as an error message may show it: origin and path.
 * A message is logged, and a redirect's query may carry a signature. One that
 * does not parse is shown as it came.
 */
export function withoutQuery(location: string): string {
  try {
    const url = new URL(location)
    return `${url.origin}${url.pathname}`
  } catch {
    return location
  }
}
