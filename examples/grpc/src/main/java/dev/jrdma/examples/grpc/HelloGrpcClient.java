package dev.jrdma.examples.grpc;

import dev.jrdma.netty.JrdmaEventLoopGroup;
import dev.jrdma.netty.JrdmaSocketChannel;

import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * A gRPC client on jrdma: grpc-java's {@code NettyChannelBuilder} with jrdma's event loop group
 * and channel type. Calls SayHello and prints the reply.
 *
 * <pre>
 *   bin/jrdma-example grpc-client [SERVER_IP [PORT [NAME]]]   (default 127.0.0.1 50051 world)
 * </pre>
 */
public final class HelloGrpcClient {
    private HelloGrpcClient() {
    }

    public static void main(String[] args) throws InterruptedException {
        String ip = args.length > 0 ? args[0] : "127.0.0.1";
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 50051;
        String name = args.length > 2 ? args[2] : "world";
        JrdmaEventLoopGroup group = new JrdmaEventLoopGroup(1);
        ManagedChannel channel = NettyChannelBuilder.forAddress(new InetSocketAddress(ip, port))
                .channelType(JrdmaSocketChannel.class, InetSocketAddress.class)
                .eventLoopGroup(group)
                .usePlaintext()
                .build();
        try {
            System.out.println("the server said: " + Greeter.sayHello(channel, name));
        } finally {
            channel.shutdown().awaitTermination(10, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
