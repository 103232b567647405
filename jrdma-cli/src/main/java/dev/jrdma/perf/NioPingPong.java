package dev.jrdma.perf;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * The anchor for the tcp provider's latency: a plain Java NIO ping-pong of 8 bytes over
 * loopback, each side one thread busy-polling a non-blocking socket (what the jrdma side
 * does with INLINE + POLLING), TCP_NODELAY on.
 */
final class NioPingPong {
    private NioPingPong() {
    }

    /** Prints "ready PORT", echoes 8-byte messages until the client closes. */
    static void serve() throws Exception {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            System.out.println("ready " + ((InetSocketAddress) server.getLocalAddress()).getPort());
            System.out.flush();
            try (SocketChannel c = server.accept()) {
                c.setOption(StandardSocketOptions.TCP_NODELAY, true);
                c.configureBlocking(false);
                ByteBuffer b = ByteBuffer.allocateDirect(8);
                while (true) {
                    b.clear();
                    while (b.hasRemaining()) {
                        if (c.read(b) < 0) {
                            return;
                        }
                    }
                    b.flip();
                    while (b.hasRemaining()) {
                        c.write(b);
                    }
                }
            }
        }
    }

    /** Round-trip times in ns of {@code iterations} ping-pongs. */
    static long[] pingPong(int port, int iterations) throws Exception {
        try (SocketChannel c = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))) {
            c.setOption(StandardSocketOptions.TCP_NODELAY, true);
            c.configureBlocking(false);
            ByteBuffer b = ByteBuffer.allocateDirect(8);
            long[] rtt = new long[iterations];
            for (int i = 0; i < iterations; i++) {
                long t = System.nanoTime();
                b.clear();
                b.putLong(0, i);
                while (b.hasRemaining()) {
                    c.write(b);
                }
                b.clear();
                while (b.hasRemaining()) {
                    if (c.read(b) < 0) {
                        throw new IllegalStateException("the server closed");
                    }
                }
                if (b.getLong(0) != i) {
                    throw new IllegalStateException("echo " + i + " came back as " + b.getLong(0));
                }
                rtt[i] = System.nanoTime() - t;
            }
            return rtt;
        }
    }
}
