package dev.jrdma.examples.grpc;

import dev.jrdma.netty.JrdmaEventLoopGroup;
import dev.jrdma.netty.JrdmaServerChannel;

import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * A gRPC server on jrdma: grpc-java's {@code NettyServerBuilder} with jrdma's event loop group
 * and server channel; the service ({@link Greeter}) is what it would be on TCP. Prints
 * "listening on ADDRESS (PROVIDER)", serves until its standard input ends, then prints "stopped".
 *
 * <pre>
 *   bin/jrdma-example grpc-server [IP [PORT]]      (default 127.0.0.1, port 50051; 0: any free one)
 * </pre>
 */
public final class HelloGrpcServer {
    private HelloGrpcServer() {
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        String ip = args.length > 0 ? args[0] : "127.0.0.1";
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 50051;
        // The provider is jrdma's "auto": verbs where there is an RDMA device, shm between
        // processes of one host, tcp otherwise. One group serves as boss and worker.
        JrdmaEventLoopGroup group = new JrdmaEventLoopGroup();
        Server server = NettyServerBuilder.forAddress(new InetSocketAddress(ip, port))
                .channelType(JrdmaServerChannel.class)
                .bossEventLoopGroup(group)
                .workerEventLoopGroup(group)
                .addService(Greeter.service())
                .build()
                .start();
        try {
            System.out.println("listening on " + server.getListenSockets().get(0) + " (" + group.rdma().providerName() + ")");
            System.out.flush();
            while (System.in.read() >= 0) {
                // Serves until standard input ends (Ctrl-D, or the test closing it).
            }
        } finally {
            server.shutdown();
            if (!server.awaitTermination(10, TimeUnit.SECONDS)) {
                server.shutdownNow();
            }
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
        }
        System.out.println("stopped");
    }
}
