/**
 * One unary gRPC method whose messages are JSON, for grpc-js's generic
 * client and server (`makeGenericClientConstructor`, `server.addService`):
 * the tests' services need no .proto, only a path.
 */
export function jsonUnary(path: string) {
  return {
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: serialize,
    requestDeserialize: deserialize,
    responseSerialize: serialize,
    responseDeserialize: deserialize,
  } as const
}

const serialize = (value: unknown) => Buffer.from(JSON.stringify(value ?? null))
const deserialize = (bytes: Buffer) => JSON.parse(bytes.toString('utf8')) as unknown
