/**
 * The name of a shell or Compose variable referenced in a config value —
 * `"${OPENAI_KEY}"`, `"$OPENAI_KEY"`, `"redis://${REDIS_HOST}:6379"` —;
 * undefined when there is none. The config is plain JSON and nothing expands
 * it: such a key went out as the text `${OPENAI_KEY}`, every request a 401
 * that retired the provider's keys until restart, and such a URL dialled a
 * host of that name, which no resolver knows. `{ "env": NAME }` is how a
 * value is read from the environment. `${NAME}` is caught anywhere in the
 * value (`:-default` and the like included); `$NAME` only as the whole value
 * and only written as environment variables are (capitals, digits, `_`):
 * a header's `$Version`, a key prefix `$gw` or a key that starts with `$`
 * is a value. Only the name is returned, never what is written around it:
 * a Compose default (`${OPENAI_KEY:-sk-…}`) or the rest of the value may be
 * a secret.
 */
export function unexpandedVariable(value: string): { name: string } | undefined {
  const braced = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:[:?+-][^}]*)?\}/.exec(value)
  if (braced !== null) return { name: braced[1] as string }
  const bare = /^\$([A-Z_][A-Z0-9_]*)$/.exec(value)
  if (bare !== null) return { name: bare[1] as string }
  return undefined
}
