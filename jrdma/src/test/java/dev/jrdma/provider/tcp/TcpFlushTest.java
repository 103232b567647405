package dev.jrdma.provider.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Access;
import dev.jrdma.Connection;
import dev.jrdma.ConnectionState;
import dev.jrdma.FlushType;
import dev.jrdma.LocalRegion;
import dev.jrdma.Rdma;
import dev.jrdma.RdmaServer;
import dev.jrdma.RemoteRegion;
import dev.jrdma.exceptions.RemoteAccessException;
import dev.jrdma.exceptions.UnsupportedCapabilityException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Flush on the software providers is an operation of its own (not a read): applied by the peer
 * after the writes before it, and for PERSISTENT on a region that is a mapped file, the peer
 * forces the range to the file before it answers.
 */
class TcpFlushTest {
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void persistentFlushForcesAMappedFileAndVisibilityNeedsNoFile(String provider, @TempDir Path dir) throws Exception {
        Path file = dir.resolve("region.dat");
        try (Rdma server = Rdma.builder().provider(provider).build();
             Rdma client = Rdma.builder().provider(provider).build();
             Arena arena = Arena.ofShared();
             FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                     StandardOpenOption.WRITE)) {
            MemorySegment mapped = ch.map(FileChannel.MapMode.READ_WRITE, 0, 4096, arena);
            LocalRegion onFile = server.register(mapped, Access.values());
            onFile.declareDirectWriteToPmem();   // the owner's promise: PERSISTENT flushes to it are honoured
            RdmaServer l = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), c -> { });
            try (Connection c = client.connect(l.address())) {
                RemoteRegion rr = RemoteRegion.fromDescriptor(onFile.toRemote().toDescriptor());
                byte[] text = "flushed to the file".getBytes(StandardCharsets.UTF_8);
                LocalRegion buf = client.allocate(text.length);
                buf.segment().copyFrom(MemorySegment.ofArray(text));
                long before = TcpQueuePair.PERSISTENT_FLUSHES.get();
                c.write(buf, rr.slice(100, text.length));   // not waited for: the flush comes after it
                c.flushSync(rr.slice(100, text.length), FlushType.PERSISTENT);
                assertEquals(before + 1, TcpQueuePair.PERSISTENT_FLUSHES.get(), "the peer forced the mapped range");
                byte[] onDisk = new byte[text.length];
                System.arraycopy(Files.readAllBytes(file), 100, onDisk, 0, text.length);
                assertArrayEquals(text, onDisk);

                // VISIBILITY to ordinary memory: no file, nothing forced.
                LocalRegion plain = server.allocate(64);
                RemoteRegion pr = RemoteRegion.fromDescriptor(plain.toRemote().toDescriptor());
                c.write(buf, pr.slice(0, text.length));
                c.flushSync(pr, FlushType.VISIBILITY);
                assertEquals(before + 1, TcpQueuePair.PERSISTENT_FLUSHES.get());
                assertEquals(-1, plain.segment().asSlice(0, text.length).mismatch(MemorySegment.ofArray(text)));

                // PERSISTENT towards a region whose owner promised nothing: refused before posting.
                UnsupportedCapabilityException u = assertThrows(UnsupportedCapabilityException.class,
                        () -> c.flushSync(pr, FlushType.PERSISTENT));
                assertTrue(u.getMessage().contains("did not declare"), u.getMessage());
                assertEquals(ConnectionState.ESTABLISHED, c.state());

                // A flush with a key the peer does not know fails like any remote access error.
                RemoteRegion wrong = RemoteRegion.of(pr.address(), 64, pr.rkey() ^ 0x55);
                ExecutionException e = assertThrows(ExecutionException.class,
                        () -> c.flush(wrong, FlushType.VISIBILITY).get(20, TimeUnit.SECONDS));
                assertInstanceOf(RemoteAccessException.class, e.getCause());
                assertEquals(ConnectionState.ERROR, c.state());
            }
        }
    }
}
