/*
 * What may go into an HTTP header line, as the packages that put configured
 * values there check it: the gateway's config schema, llm's adapters, the
 * CLI's --header. One set of rules, so a config the gateway accepts always
 * makes adapters, and both refuse what undici would refuse on every request.
 */

/** RFC 9110 `token`: the characters a header name may be made of. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
/** Visible ASCII, at least one character: no space, line break, control or non-ASCII character. */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/
/** Visible ASCII with spaces and tabs inside only (HTTP strips them at either end); empty allowed. */
const FIELD_VALUE = /^(?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?$/

/** True when `name` is a header name HTTP allows (an RFC 9110 token). */
export function isHeaderName(name: string): boolean {
  return TOKEN.test(name)
}

/**
 * True when `value` arrives as written: visible ASCII, spaces and tabs only
 * inside. A line break or control character makes undici refuse the request;
 * one at either end would be stripped in transit.
 */
export function isHeaderValue(value: string): boolean {
  return FIELD_VALUE.test(value)
}

/**
 * True when `value` is one non-empty run of visible ASCII: what an API key or
 * a request id may hold. A key read from a file with its trailing newline is
 * the usual way one fails.
 */
export function isVisibleAscii(value: string): boolean {
  return VISIBLE_ASCII.test(value)
}
