export { deadline } from './deadline.js'
export { deadlineErrors } from './deadlineErrors.js'
export type { DeadlineMiddlewareOptions } from './options.js'
