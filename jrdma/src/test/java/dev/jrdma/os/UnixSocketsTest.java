package dev.jrdma.os;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * What a peer of this host can hand over on a Unix socket: one descriptor, or a packet that is
 * refused whole. A packet with two descriptors (the kernel installs both: CMSG_SPACE(4) has room
 * for two ints) comes back truncated, without a descriptor, and both installed ones are closed,
 * none left open in this process.
 */
class UnixSocketsTest {
    private static final MethodHandle SENDMSG = NativeCalls.withErrno("sendmsg",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));

    @Test
    void aPacketWithTwoDescriptorsIsRefusedAndLeavesNoneOpen() throws Throwable {
        byte[] name = ("jrdma-test." + ProcessHandle.current().pid() + "." + System.nanoTime())
                .getBytes(StandardCharsets.US_ASCII);
        int listening = UnixSockets.listen(name, 4);
        int client = UnixSockets.connect(name);
        int server = Sockets.accept(listening);
        int one = Memfd.createSealed("one", Memfd.PAGE), two = Memfd.createSealed("two", Memfd.PAGE);
        try (Arena a = Arena.ofConfined()) {
            assertTrue(client >= 0 && server >= 0, "connected");
            // A packet of 40 bytes with SCM_RIGHTS carrying two descriptors: CMSG_LEN(8) = 24.
            MemorySegment payload = a.allocate(40, 8);
            MemorySegment iov = a.allocate(Sockets.IOVEC_SIZE, 8);
            MemorySegment msg = a.allocate(Sockets.MSGHDR_SIZE, 8);
            MemorySegment control = a.allocate(24, 8);
            control.set(JAVA_LONG, 0, 24);
            control.set(JAVA_INT, 8, Sockets.SOL_SOCKET);
            control.set(JAVA_INT, 12, 1);   // SCM_RIGHTS
            control.set(JAVA_INT, 16, one);
            control.set(JAVA_INT, 20, two);
            Sockets.iovec(iov, 0, payload.address(), 40);
            Sockets.setIov(msg, iov.address(), 1);
            msg.set(JAVA_LONG, 32, control.address());
            msg.set(JAVA_LONG, 40, 24);
            assertEquals(40L, (long) SENDMSG.invokeExact(Errno.capture(), client, msg, 0));
            long before = openFds();
            UnixSockets.Received got = UnixSockets.receive(server, a.allocate(40, 8));
            assertEquals(40, got.length());
            assertTrue(got.truncated(), "two descriptors: not a record");
            assertEquals(-1, got.fd(), "no descriptor is handed on");
            assertEquals(before, openFds(), "the descriptors the kernel installed were closed");
        } finally {
            for (int fd : new int[] {one, two, client, server, listening}) {
                if (fd >= 0) {
                    Sockets.close(fd);
                }
            }
        }
    }

    private static long openFds() throws java.io.IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }
}
