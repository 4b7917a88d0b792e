/**
 * A lazy thenable, as a knex or objection query builder, a mongoose Query or
 * a drizzle query is: its query runs when its `then` is called, once per
 * call, and mongoose refuses a second run ("Query was already executed").
 * `runs` counts the calls of `then`, `cancels` the calls of `cancel()`.
 */
export function lazyQuery() {
  let runs = 0
  let cancels = 0
  return {
    get runs() {
      return runs
    },
    get cancels() {
      return cancels
    },
    cancel() {
      cancels++
    },
    // biome-ignore lint/suspicious/noThenProperty: a thenable is what the tests are about
    then(onOk: (value: string) => unknown, onError?: (error: unknown) => unknown) {
      runs++
      const ran =
        runs === 1
          ? Promise.resolve('rows')
          : Promise.reject(new Error('Query was already executed'))
      return ran.then(onOk, onError)
    },
  }
}
