export { callersBudget } from './callersBudget.js'
export {
  expressChannels,
  type IngressClientClosedMessage,
  type IngressEndMessage,
  type IngressExpireMessage,
  type IngressInvalidHeaderMessage,
  type IngressLateWriteMessage,
  type IngressStartMessage,
} from './channels.js'
export { closeIfOrphaned } from './closeIfOrphaned.js'
export { deadline } from './deadline.js'
export { deadlineErrors } from './deadlineErrors.js'
export type { DeadlineMiddlewareOptions } from './options.js'
export { type ReportExpiredOptions, reportExpired } from './reportExpired.js'
