import { firstMember } from './firstMember.js'

/**
 * Whether an `x-deadline-expired` header or trailer says the hop that sent
 * it ran out of its own deadline (an Hourglass hop's 504, or its cut
 * stream's trailer): `1`, or `1` as the first member of a field sent twice
 * (fetch's `Headers` join `1, 1`). The one reading of it: fetch's retry
 * decision and egress events, llm's adapter, the demo.
 */
export function saysDeadlineExpired(value: string | null | undefined): boolean {
  return typeof value === 'string' && firstMember(value) === '1'
}
