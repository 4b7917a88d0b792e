/** A fence opening or closing a markdown code block: its marker and info string. */
const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/

/** One ```ts / ```typescript block of a markdown file. */
export interface TsBlock {
  /** 0-based line of the opening fence. */
  fence: number
  /** 1-based line of the block's first code line. */
  firstLine: number
  code: string
}

/**
 * The ```ts and ```typescript blocks of a markdown file's lines, in order
 * (CommonMark fences: ``` or ~~~, closed by a fence of the same character,
 * at least as long, with no info string). Other blocks are skipped whole.
 */
export function tsBlocks(lines: readonly string[]): TsBlock[] {
  const blocks: TsBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? '')
    if (!open) continue
    const [, marker = '', lang = ''] = open
    let close = i + 1
    while (close < lines.length) {
      const m = FENCE.exec(lines[close] ?? '')
      if (m && m[1]?.[0] === marker[0] && (m[1]?.length ?? 0) >= marker.length && !m[2]) break
      close++
    }
    if (lang === 'ts' || lang === 'typescript') {
      blocks.push({ fence: i, firstLine: i + 2, code: lines.slice(i + 1, close).join('\n') })
    }
    i = close
  }
  return blocks
}
