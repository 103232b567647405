package dev.jrdma.examples.flush;

import dev.jrdma.Connection;
import dev.jrdma.FlushType;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RemoteRegion;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * librpma's "write, flush, read back" client: writes a text into the server's region, flushes
 * (PERSISTENT when the server declared direct write to persistent memory, else VISIBILITY), and
 * reads it back to show it is there.
 *
 * <pre>
 *   bin/jrdma-example flush-client DEVICE SERVER_IP PORT [TEXT]
 * </pre>
 */
public final class WriteFlushReadClient {
    private WriteFlushReadClient() {
    }

    /** What one run did. */
    public record Result(FlushType flush, String readBack) {
    }

    public static Result run(Rdma rdma, InetSocketAddress server, String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        try (Connection c = rdma.connect(server);
             LocalRegion out = rdma.allocate(bytes.length);
             LocalRegion in = rdma.allocate(bytes.length)) {
            // The server put its region's descriptor in the connection's private data.
            RemoteRegion remote = RemoteRegion.fromDescriptor(c.peerPrivateData()).slice(0, bytes.length);
            FlushType flush = remote.directWriteToPmem() ? FlushType.PERSISTENT : FlushType.VISIBILITY;
            out.segment().copyFrom(MemorySegment.ofArray(bytes));
            c.write(out, remote);                       // no need to wait: the flush comes after it
            c.flushSync(remote, flush);                 // now the write is visible (or persistent)
            c.readSync(remote, in);
            return new Result(flush, new String(in.segment().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8));
        }
    }

    public static void main(String[] args) {
        if (args.length < 3) {
            System.err.println("usage: flush-client DEVICE SERVER_IP PORT [TEXT]");
            System.exit(2);
        }
        String text = args.length > 3 ? args[3] : "Hello, persistent world!";
        try (Rdma rdma = Rdma.builder().device(args[0]).build()) {
            Result r = run(rdma, new InetSocketAddress(args[1], Integer.parseInt(args[2])), text);
            System.out.println("wrote, flushed (" + r.flush() + ") and read back: " + r.readBack());
        }
    }
}
