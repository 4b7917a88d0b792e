const NOT_WHITESPACE = /\S/

/** Empty, or only whitespace: an SSE event's data that holds no JSON chunk (`data:` alone), or a text block Anthropic refuses. */
export function isBlank(data: string): boolean {
  return data === '' || !NOT_WHITESPACE.test(data)
}
