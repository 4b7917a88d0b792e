/**
 * Whether an `x-deadline-expired` header or trailer says the hop that sent
 * it ran out of its own deadline (an Hourglass hop's 504, or its cut
 * stream's trailer): `1`, or `1` as the first member of a field sent twice
 * (fetch's `Headers` join `1, 1`, as for `Retry-After`), HTTP's optional
 * whitespace around it allowed. The one reading of it: fetch's retry
 * decision and egress events, and llm's adapter.
 */
export function saysDeadlineExpired(value: string | null | undefined): boolean {
  if (typeof value !== 'string') return false
  const comma = value.indexOf(',')
  return (comma === -1 ? value : value.slice(0, comma)).replace(/^[ \t]+|[ \t]+$/g, '') === '1'
}
