/**
 * Length of the longest prefix of `bytes` that does not end inside a UTF-8
 * sequence. Only the last three bytes can belong to an unfinished character,
 * so it looks no further back. Invalid bytes count as complete: they decode
 * to U+FFFD wherever they are cut, so holding them back would only delay it.
 */
export function completeUtf8Length(bytes: Uint8Array): number {
  const n = bytes.length
  for (let back = 1; back <= Math.min(3, n); back++) {
    const byte = bytes[n - back]!
    if ((byte & 0xc0) === 0x80) continue // continuation: keep looking for the lead
    const need = byte >= 0xc2 && byte <= 0xdf ? 2 : byte >= 0xe0 && byte <= 0xef ? 3 : 4
    if (byte < 0xc2 || byte > 0xf4) return n // ASCII or never-valid lead
    return need > back ? n - back : n
  }
  return n
}
