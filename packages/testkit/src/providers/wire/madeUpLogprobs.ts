/** A token and its made-up log probability (rounded to 4 places). */
export interface MadeUpLogprob {
  token: string
  logprob: number
}

/**
 * The made-up log probabilities of an answer's tokens (numbered from
 * `first` on), the same for the same answer, as every dialect that answers
 * a request for them sends them: per token the chosen one and its `top`
 * candidates — the chosen one first, then `token~1`, `token~2`, … each 1
 * less likely than the one before (none when `top` is 0).
 */
export function madeUpLogprobs(
  tokens: readonly string[],
  first: number,
  top: number,
): Array<{ chosen: MadeUpLogprob; top: MadeUpLogprob[] }> {
  return tokens.map((token, i) => {
    const chosen = { token, logprob: round(-0.05 * (((first + i) % 7) + 1)) }
    return {
      chosen,
      top: Array.from({ length: top }, (_, k) =>
        k === 0 ? chosen : { token: `${token}~${k}`, logprob: round(chosen.logprob - k) },
      ),
    }
  })
}

function round(logprob: number): number {
  return Math.round(logprob * 1e4) / 1e4
}
