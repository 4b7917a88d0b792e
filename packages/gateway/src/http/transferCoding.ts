/**
 * The first transfer coding of the request's `Transfer-Encoding` other than
 * `chunked` and `identity` (lower-cased, without parameters), or undefined
 * when there is none. Node's parser (llhttp) takes `gzip, chunked` as chunked, strips the
 * chunking and hands over the gzip bytes as the body, with nothing that says
 * they are compressed but the header: read as JSON, a client's gzip-coded
 * body was a 400 `invalid_utf8`, a fault of bytes it never sent as text.
 * RFC 9112 §6.1: a server that receives a transfer coding it does not
 * understand SHOULD answer 501 (as Go's net/http does for any coding but
 * `chunked`). Compression belongs in `Content-Encoding`, which is decoded.
 */
export function unsupportedTransferCoding(header: string | undefined): string | undefined {
  // Every body a client sends chunked: no split, no allocation.
  if (header === undefined || header === 'chunked') return undefined
  for (const part of header.split(',')) {
    const semi = part.indexOf(';')
    const coding = (semi === -1 ? part : part.slice(0, semi)).trim().toLowerCase()
    // Empty list elements are allowed and ignored (RFC 9110 §5.6.1);
    // `identity` (no coding, struck from the registry by RFC 7230) changes
    // no byte: read as before.
    if (coding !== '' && coding !== 'chunked' && coding !== 'identity') return coding
  }
  return undefined
}
