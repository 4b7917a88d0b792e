/**
 * A scripted stream error's payload as its frame carries it: an object as
 * JSON, a string as written — as `reply.error()` sends a body. Encoded again,
 * a captured frame pasted as a string went out as a JSON string literal
 * (`data: "{\"error\":…}"`), which no provider sends, and a client that
 * retries the provider's real frame read it as unreadable.
 */
export function frameJson(body: unknown): string {
  return typeof body === 'string' ? body : JSON.stringify(body)
}
