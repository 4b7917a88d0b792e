import type { ChatResponse } from '../types.js'

/**
 * The provider reported no usage: `usageReported: false` while `usage` is
 * still the zeros it stands for. A dialect of your own that wraps a built-in
 * parser and fills `usage` from where its provider puts it (`{ ...parsed,
 * usage }`) copies the flag along with the rest: its counts are believed,
 * not the flag that no longer describes them.
 */
export function usageUnreported(response: Pick<ChatResponse, 'usage' | 'usageReported'>): boolean {
  const { usage } = response
  return (
    response.usageReported === false &&
    (usage === undefined || (usage.inputTokens === 0 && usage.outputTokens === 0))
  )
}
