type Content = { role: 'user' | 'model'; parts: Record<string, unknown>[] }

/**
 * Gemini reads the function responses of a turn in the order of the calls
 * they answer: it pairs them by place (and name), not by the ids an OpenAI
 * client pairs them by — ids Gemini 2.x never sent, the gateway made them. An
 * OpenAI client may send its tool results in the order they finished (OpenAI
 * re-sorts them by id), so two calls of one function (the weather in Paris,
 * then in Rome) answered in the other order read as each other's result.
 * The responses of a turn that follows a model turn with calls are put in
 * the order of those calls, in the places the responses held (text after
 * them stays where it was); a response naming no call there keeps its place
 * among them, after the paired ones. Written in place.
 */
export function responsesInCallOrder(contents: readonly Content[]): void {
  for (let i = 1; i < contents.length; i++) {
    const turn = contents[i] as Content
    const previous = contents[i - 1] as Content
    if (turn.role !== 'user' || previous.role !== 'model') continue
    const order = new Map<unknown, number>()
    for (const part of previous.parts) {
      const id = callId(part, 'functionCall')
      if (id !== undefined && !order.has(id)) order.set(id, order.size)
    }
    if (order.size < 2) continue
    const slots: number[] = []
    turn.parts.forEach((part, index) => {
      if (part['functionResponse'] !== undefined) slots.push(index)
    })
    if (slots.length < 2) continue
    const rank = (part: Record<string, unknown>) =>
      order.get(callId(part, 'functionResponse')) ?? order.size
    // Array.prototype.sort is stable: responses of equal rank keep their order.
    const sorted = slots.map((index) => turn.parts[index] as Record<string, unknown>)
    sorted.sort((a, b) => rank(a) - rank(b))
    slots.forEach((index, k) => {
      turn.parts[index] = sorted[k] as Record<string, unknown>
    })
  }
}

function callId(part: Record<string, unknown>, key: 'functionCall' | 'functionResponse') {
  const value = part[key] as { id?: unknown } | undefined
  return value?.id
}
