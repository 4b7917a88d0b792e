export { cancelOnDestroy } from './cancelOnDestroy.js'
export {
  type GrpcClientEndMessage,
  type GrpcClientStartMessage,
  type GrpcServerClientCancelledMessage,
  type GrpcServerEndMessage,
  type GrpcServerExpireMessage,
  type GrpcServerFailedAfterAnswerMessage,
  type GrpcServerInvalidHeaderMessage,
  type GrpcServerLateWriteMessage,
  type GrpcServerStartMessage,
  grpcChannels,
} from './channels.js'
export type { ClientDeadlineOptions } from './clientOptions.js'
export { deadlineErrors } from './deadlineErrors.js'
export { deadlineInterceptor } from './deadlineInterceptor.js'
export { deadlineOf } from './deadlineOf.js'
export { deadlineServerInterceptor } from './deadlineServerInterceptor.js'
export { fromGrpcError } from './fromGrpcError.js'
export type { ServerDeadlineOptions } from './serverOptions.js'
export { withCallDeadline } from './withCallDeadline.js'
