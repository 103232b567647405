package dev.jrdma.provider.shm;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.os.Memfd;
import dev.jrdma.os.Sockets;
import dev.jrdma.os.UnixSockets;
import dev.jrdma.provider.tcp.SameHostChannel;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * A rendezvous keeps only the offers it asked for. Its name is public ({@code /proc/net/unix})
 * and anyone may send a server of our uid a HELLO naming it, so such a server can be made to
 * connect here again and again. Offers that bring no nonce this side handed out, or bring a
 * descriptor, are closed as they are read: they cost no descriptor after the drain and do not
 * stay in the kernel's queue, and the one offer that was asked for is still found.
 */
class ShmRendezvousTest {

    @Test
    @Timeout(30)
    void unaskedOffersAreClosedAtOnceAndTheAskedOneIsFound() throws IOException {
        try (ShmRendezvous r = ShmRendezvous.open(); Arena a = Arena.ofConfined()) {
            MemorySegment record = a.allocate(ShmChannel.RECORD, 8);
            long before = openFds();
            List<Integer> flood = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                byte[] stranger = new byte[16];
                ByteBuffer.wrap(stranger).putInt(i + 1);
                flood.add(offer(r.name(), stranger, -1, record));
            }
            int memfd = Memfd.createSealed("offer", Memfd.PAGE);
            byte[] asked = r.expect();   // drains: all 500 read and closed
            int withDescriptor = offer(r.name(), r.expect(), memfd, record);
            Sockets.close(memfd);
            int good = offer(r.name(), asked, -1, record);
            assertEquals(500, r.refusedOffers(), "every unasked offer was refused at the drain of the next HELLO");
            for (int fd : flood) {
                assertEquals(0, UnixSockets.receive(fd, record).length(), "the rendezvous closed an unasked offer");
            }

            ShmChannel found = r.arrived(asked);
            assertNotNull(found, "the offer with our nonce is found");
            SameHostChannel.Record first = found.receive();
            assertEquals(SameHostChannel.RING_OFFER, first.kind());
            assertEquals(-1, first.fd());
            assertEquals(501, r.refusedOffers(), "an offer carrying a descriptor is refused, even with our nonce");
            assertEquals(0, UnixSockets.receive(withDescriptor, record).length());
            assertNull(r.arrived(asked), "a nonce is claimed once");
            found.close();

            for (int fd : flood) {
                Sockets.close(fd);
            }
            Sockets.close(withDescriptor);
            Sockets.close(good);
            assertEquals(before, openFds(), "no descriptor of the flood is left in this process");
        }
    }

    @Test
    @Timeout(30)
    void anOfferForANonceAlreadyClaimedIsRefused() {
        try (ShmRendezvous r = ShmRendezvous.open(); Arena a = Arena.ofConfined()) {
            MemorySegment record = a.allocate(ShmChannel.RECORD, 8);
            byte[] nonce = r.expect();
            int first = offer(r.name(), nonce, -1, record);
            ShmChannel c = r.arrived(nonce);
            assertNotNull(c);
            int replay = offer(r.name(), nonce, -1, record);
            assertNull(r.arrived(nonce), "a replayed nonce finds nothing");
            assertEquals(1, r.refusedOffers());
            c.close();
            Sockets.close(first);
            Sockets.close(replay);
        }
    }

    /** Connects to the rendezvous {@code name} as a server would and sends a RING_OFFER for {@code nonce}. */
    private static int offer(byte[] name, byte[] nonce, int fd, MemorySegment record) {
        int s = UnixSockets.connect(name);
        assertTrue(s >= 0, "connected to the rendezvous");
        ByteBuffer n = ByteBuffer.wrap(nonce).order(ByteOrder.LITTLE_ENDIAN);
        record.fill((byte) 0);
        record.set(JAVA_LONG, 0, SameHostChannel.RING_OFFER);
        record.set(JAVA_LONG, 8, n.getLong());
        record.set(JAVA_LONG, 16, n.getLong());
        assertEquals(ShmChannel.RECORD, UnixSockets.send(s, record, fd));
        return s;
    }

    private static long openFds() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }
}
