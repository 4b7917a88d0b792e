/**
 * A shell or Compose variable reference written into a config value —
 * `"${OPENAI_KEY}"`, `"$OPENAI_KEY"`, `"redis://${REDIS_HOST}:6379"` —
 * as it is written (`${REDIS_HOST}`) with the variable's name; undefined
 * when there is none. The config is plain JSON and nothing expands it: such
 * a key went out as the text `${OPENAI_KEY}`, every request a 401 that
 * retired the provider's keys until restart, and such a URL dialled a host
 * of that name, which no resolver knows. `{ "env": NAME }` is how a value
 * is read from the environment. `${NAME}` is caught anywhere in the value
 * (`:-default` and the like included); `$NAME` only as the whole value,
 * since a lone `$` may belong to a header value or a password.
 */
export function unexpandedVariable(value: string): { written: string; name: string } | undefined {
  const braced = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:[:?+-][^}]*)?\}/.exec(value)
  if (braced !== null) return { written: braced[0], name: braced[1] as string }
  const bare = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(value)
  if (bare !== null) return { written: bare[0], name: bare[1] as string }
  return undefined
}
