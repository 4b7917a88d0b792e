export { closedPort } from './closedPort.js'
export type { Fault, FaultPlan, FaultRequest } from './Fault.js'
export { type FaultServer, type FaultServerOptions, faultServer } from './faultServer.js'
export { type RequestLog, type RequestRecord, recordOf, recordRequests } from './recordRequests.js'
export {
  type TcpFaultServer,
  type TcpFaultServerOptions,
  tcpFaultServer,
} from './tcpFaultServer.js'
