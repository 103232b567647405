package dev.jrdma.netty.bench;

import dev.jrdma.Rdma;
import dev.jrdma.netty.JrdmaEventLoopGroup;
import dev.jrdma.netty.JrdmaServerChannel;
import dev.jrdma.netty.JrdmaSocketChannel;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * bench/netty.md: jrdma-netty (shm, tcp) against Netty's epoll transport on loopback, each
 * measured between two JVMs started with the same flags, rounds alternating the transports:
 * <ul>
 * <li>a raw Netty echo: 1 KiB ping-pong, round-trip p50/p99;</li>
 * <li>gRPC unary: 1 KiB request and reply, round-trip p50/p99, each call started from the last one's
 * callback on the client's event loop (async stub, direct executors: no hand-over to another thread);</li>
 * <li>gRPC server streaming: 64 KiB messages with gRPC's flow control, received on the event loop, MiB/s.</li>
 * </ul>
 * {@code run [--rounds N] [--out FILE]} runs everything ({@code scripts/bench-netty});
 * {@code server TRANSPORT} and {@code client TRANSPORT RAW_PORT GRPC_PORT} are its two processes.
 * One event loop on each side, for every transport.
 */
public final class NettyBench {
    static final String HOST = "127.0.0.1";
    static final int MESSAGE = 1024;
    static final int RAW_WARMUP = 20_000, RAW_COUNT = 50_000;
    static final int UNARY_WARMUP = 5_000, UNARY_COUNT = 20_000;
    static final int STREAM_SIZE = 64 * 1024, STREAM_WARMUP = 1_000, STREAM_COUNT = 4_000;

    private NettyBench() {
    }

    /** The transports, in the report's order. */
    enum Transport {
        EPOLL("Netty epoll (TCP loopback)", null, 0, false),
        JRDMA_SHM("jrdma-netty shm", "shm", JrdmaEventLoopGroup.DEFAULT_SPIN_NANOS, false),
        JRDMA_SHM_NO_SPIN("jrdma-netty shm, no spin", "shm", 0, false),
        JRDMA_SHM_REGISTERED("jrdma-netty shm, registered buffers", "shm", JrdmaEventLoopGroup.DEFAULT_SPIN_NANOS, true),
        JRDMA_TCP("jrdma-netty tcp", "tcp", JrdmaEventLoopGroup.DEFAULT_SPIN_NANOS, false);

        final String title;
        /** jrdma's provider; null for epoll. */
        final String provider;
        /** How long an idle jrdma loop polls before it sleeps. */
        final long spinNanos;
        /** The channels' allocator is the group's JrdmaByteBufAllocator (else Netty's default, pooled). */
        final boolean registered;

        Transport(String title, String provider, long spinNanos, boolean registered) {
            this.title = title;
            this.provider = provider;
            this.spinNanos = spinNanos;
            this.registered = registered;
        }

        EventLoopGroup group(String role) {
            DefaultThreadFactory threads = new DefaultThreadFactory("bench-" + role + "-" + name().toLowerCase(), true);
            return provider == null ? new EpollEventLoopGroup(1, threads)
                    : new JrdmaEventLoopGroup(1, threads, Rdma.builder().provider(provider), java.time.Duration.ofNanos(spinNanos));
        }

        /** The channels' allocator: the group's registered memory, or Netty's default. */
        io.netty.buffer.ByteBufAllocator allocator(EventLoopGroup group) {
            return registered ? ((JrdmaEventLoopGroup) group).allocator() : io.netty.buffer.ByteBufAllocator.DEFAULT;
        }

        Class<? extends ServerChannel> serverChannel() {
            return this == EPOLL ? EpollServerSocketChannel.class : JrdmaServerChannel.class;
        }

        Class<? extends Channel> channel() {
            return this == EPOLL ? EpollSocketChannel.class : JrdmaSocketChannel.class;
        }
    }

    // ---------------------------------------------------------------- gRPC methods, bytes as they are

    static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    static final MethodDescriptor<byte[], byte[]> ECHO = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName("bench.Bench/Echo")
            .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();

    /** Request: {count, size} as two ints; the reply stream: count messages of size bytes. */
    static final MethodDescriptor<byte[], byte[]> STREAM = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.SERVER_STREAMING).setFullMethodName("bench.Bench/Stream")
            .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();

    static ServerServiceDefinition service() {
        return ServerServiceDefinition.builder("bench.Bench")
                .addMethod(ECHO, ServerCalls.asyncUnaryCall((byte[] request, io.grpc.stub.StreamObserver<byte[]> reply) -> {
                    reply.onNext(request);
                    reply.onCompleted();
                }))
                .addMethod(STREAM, ServerCalls.asyncServerStreamingCall((byte[] request, io.grpc.stub.StreamObserver<byte[]> out) -> {
                    ServerCallStreamObserver<byte[]> o = (ServerCallStreamObserver<byte[]>) out;
                    ByteBuffer b = ByteBuffer.wrap(request);
                    int count = b.getInt(0);
                    byte[] payload = new byte[b.getInt(4)];
                    int[] sent = {0};
                    boolean[] done = {false};
                    // gRPC's flow control: send while the transport is ready, resume when it is again.
                    Runnable pump = () -> {
                        while (o.isReady() && sent[0] < count) {
                            o.onNext(payload);
                            sent[0]++;
                        }
                        if (sent[0] == count && !done[0]) {
                            done[0] = true;
                            o.onCompleted();
                        }
                    };
                    o.setOnReadyHandler(pump);
                    pump.run();
                }))
                .build();
    }

    // ---------------------------------------------------------------- the server process

    static void server(Transport t) throws Exception {
        EventLoopGroup group = t.group("server");
        Channel raw = new ServerBootstrap().group(group).channel(t.serverChannel())
                .childOption(ChannelOption.ALLOCATOR, t.allocator(group))
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ctx.write(msg, ctx.voidPromise());
                            }

                            @Override
                            public void channelReadComplete(ChannelHandlerContext ctx) {
                                ctx.flush();
                            }
                        });
                    }
                }).bind(new InetSocketAddress(HOST, 0)).sync().channel();
        Server grpc = NettyServerBuilder.forAddress(new InetSocketAddress(HOST, 0)).channelType(t.serverChannel())
                .bossEventLoopGroup(group).workerEventLoopGroup(group).directExecutor()
                .withChildOption(ChannelOption.ALLOCATOR, t.allocator(group))
                .addService(service()).build().start();
        System.out.println("ports " + ((InetSocketAddress) raw.localAddress()).getPort() + " "
                + ((InetSocketAddress) grpc.getListenSockets().get(0)).getPort());
        System.out.flush();
        while (System.in.read() >= 0) {
            // until the end of input
        }
        grpc.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        raw.close().sync();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
    }

    // ---------------------------------------------------------------- the client process

    /** Ping-pong on the client's event loop: the next 1 KiB goes out when the last came back whole. */
    static final class PingPong extends ChannelInboundHandlerAdapter {
        private static final com.sun.management.ThreadMXBean THREADS =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        final long[] rtt;
        final int warmup;
        final CompletableFuture<long[]> done = new CompletableFuture<>();
        int sent, received;
        long start;
        /** What the client's loop thread allocated from the end of the warm-up to the last round trip. */
        long allocatedAtWarmup, allocated;

        PingPong(int warmup, int count) {
            this.warmup = warmup;
            this.rtt = new long[count];
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ping(ctx);
        }

        private void ping(ChannelHandlerContext ctx) {
            ByteBuf b = ctx.alloc().directBuffer(MESSAGE);
            b.writerIndex(MESSAGE);
            start = System.nanoTime();
            ctx.writeAndFlush(b, ctx.voidPromise());   // no promise per message: what is measured is the transport's path
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            received += b.readableBytes();
            b.release();
            if (received < MESSAGE) {
                return;
            }
            if (received > MESSAGE) {
                done.completeExceptionally(new IllegalStateException("more than one message back: " + received));
                return;
            }
            long now = System.nanoTime();
            received = 0;
            if (sent == warmup) {
                allocatedAtWarmup = THREADS.getCurrentThreadAllocatedBytes();
            }
            if (sent >= warmup) {
                rtt[sent - warmup] = now - start;
            }
            if (++sent == warmup + rtt.length) {
                allocated = THREADS.getCurrentThreadAllocatedBytes() - allocatedAtWarmup;
                done.complete(rtt);
                return;
            }
            ping(ctx);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
        }
    }

    static Map<String, Double> client(Transport t, int rawPort, int grpcPort) throws Exception {
        Map<String, Double> r = new LinkedHashMap<>();
        EventLoopGroup group = t.group("client");
        try {
            PingPong pp = new PingPong(RAW_WARMUP, RAW_COUNT);
            Channel ch = new Bootstrap().group(group).channel(t.channel()).option(ChannelOption.ALLOCATOR, t.allocator(group))
                    .handler(pp).connect(new InetSocketAddress(HOST, rawPort)).sync().channel();
            long[] rtt = pp.done.get(300, TimeUnit.SECONDS);
            ch.close().sync();
            percentiles(r, "raw echo 1 KiB", rtt);
            r.put("raw echo 1 KiB, client loop allocation B/round trip", (double) pp.allocated / (rtt.length - 1));

            ManagedChannel channel = NettyChannelBuilder.forAddress(new InetSocketAddress(HOST, grpcPort))
                    .channelType(t.channel(), InetSocketAddress.class).eventLoopGroup(group).usePlaintext()
                    .withOption(ChannelOption.ALLOCATOR, t.allocator(group))
                    .directExecutor().build();
            try {
                percentiles(r, "gRPC unary 1 KiB", unaryPingPong(channel).get(300, TimeUnit.SECONDS));

                stream(channel, STREAM_WARMUP);
                long s = System.nanoTime();
                long bytes = stream(channel, STREAM_COUNT);
                double seconds = (System.nanoTime() - s) / 1e9;
                r.put("gRPC streaming 64 KiB MiB/s", bytes / seconds / (1 << 20));
            } finally {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        } finally {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
        }
        return r;
    }

    /**
     * Unary calls one after another, each started from the previous one's reply callback: with the
     * channel's direct executor that is the client's event loop, as the raw echo's next ping is (no
     * hand-over to an application thread, as grpc-java's own async benchmark client does it).
     */
    private static CompletableFuture<long[]> unaryPingPong(ManagedChannel channel) {
        CompletableFuture<long[]> done = new CompletableFuture<>();
        byte[] request = new byte[MESSAGE];
        long[] rtt = new long[UNARY_COUNT];
        new io.grpc.stub.StreamObserver<byte[]>() {
            int calls;
            long start;

            void next() {
                start = System.nanoTime();
                ClientCalls.asyncUnaryCall(channel.newCall(ECHO, CallOptions.DEFAULT), request, this);
            }

            @Override
            public void onNext(byte[] reply) {
                long now = System.nanoTime();
                if (reply.length != MESSAGE) {
                    done.completeExceptionally(new IllegalStateException("a reply of " + reply.length + " bytes"));
                } else if (calls >= UNARY_WARMUP) {
                    rtt[calls - UNARY_WARMUP] = now - start;
                }
            }

            @Override
            public void onError(Throwable t) {
                done.completeExceptionally(t);
            }

            @Override
            public void onCompleted() {
                if (++calls == UNARY_WARMUP + UNARY_COUNT) {
                    done.complete(rtt);
                } else if (!done.isDone()) {
                    next();
                }
            }

            { next(); }
        };
        return done;
    }

    /** One server-streaming call of {@code count} messages, received on the event loop (direct executor). */
    private static long stream(ManagedChannel channel, int count) throws Exception {
        byte[] request = ByteBuffer.allocate(8).putInt(count).putInt(STREAM_SIZE).array();
        CompletableFuture<long[]> done = new CompletableFuture<>();
        ClientCalls.asyncServerStreamingCall(channel.newCall(STREAM, CallOptions.DEFAULT), request,
                new io.grpc.stub.StreamObserver<byte[]>() {
                    long bytes, n;

                    @Override
                    public void onNext(byte[] message) {
                        bytes += message.length;
                        n++;
                    }

                    @Override
                    public void onError(Throwable t) {
                        done.completeExceptionally(t);
                    }

                    @Override
                    public void onCompleted() {
                        done.complete(new long[] {n, bytes});
                    }
                });
        long[] got = done.get(300, TimeUnit.SECONDS);
        if (got[0] != count || got[1] != (long) count * STREAM_SIZE) {
            throw new IllegalStateException(got[0] + " messages, " + got[1] + " bytes streamed; " + count + " asked for");
        }
        return got[1];
    }

    private static void percentiles(Map<String, Double> r, String what, long[] nanos) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        r.put(what + " p50 us", sorted[sorted.length / 2] / 1e3);
        r.put(what + " p99 us", sorted[(int) (sorted.length * 0.99)] / 1e3);
    }

    // ---------------------------------------------------------------- the run: both processes per transport, rounds

    static void run(int rounds, Path out) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> jvm = List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xms512m", "-Xmx512m",
                "-Dio.netty.leakDetection.level=disabled", "-cp", System.getProperty("java.class.path"));
        Map<Transport, Map<String, List<Double>>> all = new LinkedHashMap<>();
        for (int round = 0; round < rounds; round++) {
            Transport[] order = Transport.values();
            for (int k = 0; k < order.length; k++) {
                Transport t = order[(k + round) % order.length];   // alternating: no transport always runs first
                Map<String, Double> one = oneRun(jvm, t);
                System.out.println("round " + (round + 1) + " " + t + ": " + one);
                one.forEach((key, v) -> all.computeIfAbsent(t, x -> new LinkedHashMap<>())
                        .computeIfAbsent(key, x -> new ArrayList<>()).add(v));
            }
        }
        Files.writeString(out, report(all, rounds, jvm));
        System.out.println("wrote " + out);
    }

    private static Map<String, Double> oneRun(List<String> jvm, Transport t) throws Exception {
        List<String> s = new ArrayList<>(jvm);
        s.addAll(List.of(NettyBench.class.getName(), "server", t.name()));
        Process server = new ProcessBuilder(s).redirectErrorStream(true).start();
        try {
            BufferedReader so = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String line;
            StringBuilder said = new StringBuilder();
            while ((line = so.readLine()) != null && !line.startsWith("ports ")) {
                said.append(line).append('\n');
            }
            if (line == null) {
                throw new IllegalStateException(t + " server did not start: " + said);
            }
            Thread.ofPlatform().daemon().start(() -> so.lines().forEach(l -> { }));
            String[] ports = line.split(" ");
            List<String> c = new ArrayList<>(jvm);
            c.addAll(List.of(NettyBench.class.getName(), "client", t.name(), ports[1], ports[2]));
            Process client = new ProcessBuilder(c).redirectErrorStream(true).start();
            String out = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!client.waitFor(600, TimeUnit.SECONDS) || client.exitValue() != 0) {
                throw new IllegalStateException(t + " client failed: " + out);
            }
            Map<String, Double> r = new LinkedHashMap<>();
            for (String l : out.split("\n")) {
                if (l.startsWith("result\t")) {
                    String[] kv = l.split("\t");
                    r.put(kv[1], Double.parseDouble(kv[2]));
                }
            }
            server.getOutputStream().close();
            server.waitFor(30, TimeUnit.SECONDS);
            return r;
        } finally {
            server.destroyForcibly();
        }
    }

    static double median(List<Double> v) {
        double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }

    static String report(Map<Transport, Map<String, List<Double>>> all, int rounds, List<String> jvm) {
        StringBuilder md = new StringBuilder();
        md.append("# jrdma-netty against Netty's epoll transport\n\n");
        md.append("Run by `scripts/bench-netty --rounds ").append(rounds).append("` on ")
                .append(java.time.LocalDate.now()).append(", ").append(Runtime.getRuntime().availableProcessors())
                .append(" CPUs, Java ").append(System.getProperty("java.version")).append(", Netty ")
                .append(io.netty.util.Version.identify().getOrDefault("netty-transport",
                        io.netty.util.Version.identify().values().iterator().next()).artifactVersion())
                .append(", grpc-java ").append(io.grpc.internal.GrpcUtil.getGrpcBuildVersion().getImplementationVersion())
                .append(". Each measurement is a server JVM and a client JVM on this host (loopback for epoll and tcp),")
                .append(" both with `").append(String.join(" ", jvm.subList(1, jvm.size() - 2)))
                .append("`, one event loop on each side; rounds alternate the transports' order; each value is the")
                .append(" median of the rounds (all rounds below).\n\n");
        List<String> keys = new ArrayList<>(all.values().iterator().next().keySet());
        md.append("| measure |");
        all.keySet().forEach(t -> md.append(' ').append(t.title).append(" |"));
        md.append("\n|---|");
        all.keySet().forEach(t -> md.append("---|"));
        md.append('\n');
        for (String k : keys) {
            md.append("| ").append(k).append(" |");
            for (Transport t : all.keySet()) {
                md.append(String.format(" %.1f |", median(all.get(t).get(k))));
            }
            md.append('\n');
        }
        Map<String, Double> epoll = medians(all.get(Transport.EPOLL));
        md.append("\n## Targets (issue 21), for each way of running on shm\n\n");
        for (Transport t : all.keySet()) {
            if (!"shm".equals(t.provider)) {
                continue;
            }
            Map<String, Double> shm = medians(all.get(t));
            double unaryRatio = shm.get("gRPC unary 1 KiB p50 us") / epoll.get("gRPC unary 1 KiB p50 us");
            double streamRatio = shm.get("gRPC streaming 64 KiB MiB/s") / epoll.get("gRPC streaming 64 KiB MiB/s");
            md.append(String.format("- %s: gRPC unary p50 ≤ 0.5× epoll: %.2f× — **%s**; gRPC streaming throughput ≥ 2× epoll: %.2f× — **%s**%n",
                    t.title, unaryRatio, unaryRatio <= 0.5 ? "met" : "not met", streamRatio, streamRatio >= 2 ? "met" : "not met"));
        }
        md.append("\n## Every round\n\n| transport | measure | rounds |\n|---|---|---|\n");
        for (Transport t : all.keySet()) {
            for (String k : keys) {
                md.append("| ").append(t.title).append(" | ").append(k).append(" | ");
                List<String> vs = new ArrayList<>();
                all.get(t).get(k).forEach(v -> vs.add(String.format("%.1f", v)));
                md.append(String.join(", ", vs)).append(" |\n");
            }
        }
        return md.toString();
    }

    private static Map<String, Double> medians(Map<String, List<Double>> m) {
        Map<String, Double> r = new TreeMap<>();
        m.forEach((k, v) -> r.put(k, median(v)));
        return r;
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "server" -> server(Transport.valueOf(args[1]));
            case "client" -> {
                Map<String, Double> r = client(Transport.valueOf(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]));
                r.forEach((k, v) -> System.out.println("result\t" + k + "\t" + v));
            }
            case "run" -> {
                int rounds = 3;
                Path out = Path.of("bench/netty.md");
                for (int i = 1; i < args.length; i++) {
                    switch (args[i]) {
                        case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                        case "--out" -> out = Path.of(args[++i]);
                        default -> throw new IllegalArgumentException("unknown option " + args[i]);
                    }
                }
                run(rounds, out);
            }
            default -> throw new IllegalArgumentException("server, client or run, not " + args[0]);
        }
    }
}
