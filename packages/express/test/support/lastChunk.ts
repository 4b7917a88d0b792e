/**
 * A chunked body's last chunk (`0`), its trailer fields if any (a stream
 * the deadline cut carries `x-deadline-expired: 1`), and the blank line:
 * what a test that wants no clean end asserts is absent.
 */
export const LAST_CHUNK = /(?:^|\r\n)0\r\n(?:[^\r\n]+\r\n)*\r\n$/
