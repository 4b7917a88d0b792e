import { finishedInput } from './finishedInput.js'

/**
 * What Anthropic sends of a tool's input as each piece is generated, when
 * it buffers the input (a tool without `eager_input_streaming`): "one
 * complete key and value property from input at a time" (docs.claude.com,
 * streaming with tool use), each parameter once it is whole — nothing while
 * one is being written, then all of it. `pieces` are the input's text as
 * generated; the result has one entry per piece, `''` where nothing is sent.
 * The input's end sends what is left as written (malformed text included);
 * a call `cut` by the token cap never gets there: the parameter it was
 * writing is not sent, as the unstreamed answer's `input` leaves it out.
 */
export function bufferedInput(pieces: string[], cut: boolean): string[] {
  const sent: string[] = []
  let written = ''
  let released = 0
  pieces.forEach((piece, i) => {
    written += piece
    const upTo = !cut && i === pieces.length - 1 ? written.length : finishedLength(written)
    sent.push(upTo > released ? written.slice(released, upTo) : '')
    released = Math.max(released, upTo)
  })
  return sent
}

/** How much of `written` its finished top-level members take (0: none yet). */
function finishedLength(written: string): number {
  const closed = finishedInput(written)
  // `finishedInput` closes a prefix of the text with `}`; `{}` is none.
  return closed === '{}' ? 0 : closed.length - 1
}
