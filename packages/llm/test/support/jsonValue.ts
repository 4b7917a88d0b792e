import fc from 'fast-check'

/**
 * `fc.jsonValue({ maxDepth })`'s values, built with null-prototype objects:
 * fast-check's own `anything` builder with jsonValue's leaves, keys and
 * depth rules, drawing the same random numbers, so a seed gives the very
 * same JSON text as `fc.jsonValue` (checked over thousands of samples) at
 * about two thirds of the cost. fast-check builds each object of `jsonValue` as `{}` and adds its
 * random keys one by one: every new key is a new hidden-class transition in
 * V8, and in the normaliser fuzz files (hundreds of thousands of objects)
 * that mapper alone was a fifth of the time. For tests that only
 * `JSON.stringify` what they draw: the prototype is all that differs.
 */
export function jsonValue(constraints: { maxDepth: number }): fc.Arbitrary<unknown> {
  const depthIdentifier = fc.createDepthIdentifier()
  const leaf = fc.oneof(
    fc.boolean(),
    fc.double({ noDefaultInfinity: true, noNaN: true }),
    fc.string(),
    fc.constant(null),
  )
  return fc.letrec<{ value: unknown; array: unknown[]; object: Record<string, unknown> }>(
    (tie) => ({
      value: fc.oneof(
        { maxDepth: constraints.maxDepth, depthIdentifier },
        leaf,
        tie('array'),
        tie('object'),
      ),
      array: fc.array(tie('value'), { depthIdentifier }),
      object: fc
        .uniqueArray(fc.tuple(fc.string(), tie('value')), {
          selector: (entry) => entry[0],
          depthIdentifier,
        })
        .map(toObject),
    }),
  ).value
}

function toObject(entries: [string, unknown][]): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null)
  for (const [key, value] of entries) out[key] = value
  return out
}

/** `fc.json({ maxDepth })`: the text of `jsonValue`. */
export function json(constraints: { maxDepth: number }): fc.Arbitrary<string> {
  return jsonValue(constraints).map((value) => JSON.stringify(value))
}
