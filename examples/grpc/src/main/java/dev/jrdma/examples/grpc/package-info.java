/**
 * A gRPC hello world on jrdma: grpc-java's own {@code NettyServerBuilder} and
 * {@code NettyChannelBuilder}, given jrdma-netty's event loop group and channel types. Nothing
 * else of a gRPC service changes.
 */
package dev.jrdma.examples.grpc;
