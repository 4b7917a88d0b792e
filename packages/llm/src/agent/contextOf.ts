/**
 * The context handed to a caller's `call` or tool: `carried` as own
 * enumerable fields — names `callModel` and `sideEffect` take as options
 * (`idempotencyKey`, `signal`, `deadline`) — and `told` beside them, readable
 * (destructuring, `ctx.turn`) but not enumerable, so a spread does not carry
 * them. Passed on as `callModel({ …, ...ctx })`, as the README suggests,
 * `turn`, `lastTurn`, `repair` and `key` were refused as options nobody reads.
 */
export function contextOf<C extends object, T extends object>(carried: C, told: T): C & T {
  const context = { ...carried } as C & T
  for (const [name, value] of Object.entries(told)) {
    Object.defineProperty(context, name, { value, enumerable: false })
  }
  return context
}
