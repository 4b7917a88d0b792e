import type { ServerResponse } from 'node:http'

/**
 * An HTTP/1 response that declared its length (a `Content-Length`) and has
 * handed its socket the whole of it, head and body, without `end()` yet
 * (the handler wrote its body and awaits something before it ends; a piped
 * source whose last chunk was written, its 'end' still to come). It is not
 * cut short: ending it is truthful, and the keep-alive connection, with any
 * answer pipelined behind it, carries on. Destroyed as one cut short, the
 * client had its whole answer and lost the connection under it, and every
 * pipelined request after it went unanswered.
 *
 * `givenBefore` is what the socket had been given when the request arrived,
 * or, for one pipelined behind another, when its turn came (Node hands it
 * the socket, then flushes what it buffered): `socket.bytesWritten`, which
 * counts what the socket still buffers. The bytes
 * given since, and those the response still holds, are its head and body.
 * Node counts a body's bytes only under `strictContentLength`, so the
 * socket's count is the one there is. Not when a `100 Continue` went out for
 * the request (its bytes are among those): such a response is destroyed as
 * before. An interim head the handler wrote itself (`writeEarlyHints`) is
 * counted as body too: one answer whose body is short by exactly that
 * head's length would be ended where it should be destroyed.
 */
export function wholeBodyGiven(res: ServerResponse, givenBefore: number | undefined): boolean {
  const out = res as ServerResponse & {
    _header?: unknown
    _contentLength?: unknown
    _expect_continue?: boolean
    outputSize?: number
  }
  const socket = res.socket as (ServerResponse['socket'] & { _httpMessage?: unknown }) | null
  // Not the socket's current response (HTTP/2's compat socket is the session's): nothing to count.
  if (givenBefore === undefined || socket === null || socket._httpMessage !== res) return false
  if (typeof out._header !== 'string' || typeof out._contentLength !== 'number') return false
  if (out._expect_continue === true) return false
  // A head with a character past ASCII (`filename="café.txt"`) has no one
  // length on the wire: Node writes it as latin1 beside a Buffer, but joined
  // to a first string chunk as UTF-8, two bytes a character. Counted as one,
  // a body short by that many bytes read as whole, and was ended: the next
  // answer's bytes completed it on the client's connection.
  if (PAST_ASCII.test(out._header)) return false
  const given = socket.bytesWritten - givenBefore + (out.outputSize ?? 0)
  // An ASCII head is one byte a character, however it was written.
  return given === out._header.length + out._contentLength
}

const PAST_ASCII = /[\u0080-\uffff]/
