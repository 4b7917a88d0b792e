/**
 * `text` at most `maxChars` long, `…` last when cut; never between the two
 * halves of a surrogate pair: a lone half is no text a client can encode
 * (openai-python raised on printing it).
 */
export function cutText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text
  let end = Math.max(0, maxChars - 1)
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return `${text.slice(0, end)}…`
}
