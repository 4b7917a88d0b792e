/**
 * Sets `name` on `error` as a readable, non-enumerable own property: there
 * for the code that reads it, left out of what a logger serialises (pino's
 * `err` serializer copies the enumerable properties, as JSON.stringify and
 * util.inspect show them). For a value the message was careful to cut (a
 * redirect's `Location`, whose query may carry a signature and whose
 * authority a password): an enumerable field put it whole in the log line.
 */
export function unloggedField(error: Error, name: string, value: unknown): void {
  Object.defineProperty(error, name, {
    value,
    enumerable: false,
    writable: false,
    configurable: true,
  })
}
