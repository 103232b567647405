package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.ConnectionRejectedException;
import dev.jrdma.exceptions.RemoteAccessException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.channels.CompletionHandler;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The public API end to end, on every transport: a server Rdma and a client Rdma (on verbs, one
 * Soft-RoCE device each), every operation checked byte for byte, in each completion mode.
 */
abstract class RdmaApiConformance {
    /** What this run goes over: verbs in the VM, or a software provider on the host. */
    protected abstract Transport transport();

    private static final long T = 20;   // seconds, for every wait

    private static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static Throwable cause(CompletableFuture<?> f) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(T, TimeUnit.SECONDS));
        return e.getCause();
    }

    /**
     * On verbs the QP carries the ack timeout and RNR timer each side asked for (rdma_set_option
     * before connect and accept; an RTS to RTS change after), and rdma_cm's own when not asked;
     * the software transports have neither (-1).
     */
    @Test
    void ackTimeoutAndRnrTimerAreAppliedToTheQueuePairOnVerbsAndAbsentOnSoftware() throws Exception {
        ConnectionConfig server = ConnectionConfig.builder().ackTimeout(12).minRnrTimer(12).build();
        ConnectionConfig client = ConnectionConfig.builder().ackTimeout(14).minRnrTimer(18).build();
        try (TestPair p = TestPair.open(transport(), CompletionMode.POLLING, server, client)) {
            Connection serverSide = p.accepted().poll(T, TimeUnit.SECONDS);
            assertNotNull(serverSide, "the server accepted");
            assertEquals(64, p.conn().peerReceiveQueueDepth(), "the server's receives, as its handshake told");
            assertEquals(64, serverSide.peerReceiveQueueDepth(), "the client's receives");
            if (transport().isVerbs()) {
                assertEquals(14, p.conn().queuePair().ackTimeout(), "client QP: " + p.conn().queuePair());
                assertEquals(12, serverSide.queuePair().ackTimeout(), "server QP: " + serverSide.queuePair());
                assertEquals(java.time.Duration.ofNanos(4096L << 14), p.conn().queuePair().ackTimeoutDuration());
                assertEquals(18, p.conn().queuePair().minRnrTimer(), "client QP: " + p.conn().queuePair());
                assertEquals(12, serverSide.queuePair().minRnrTimer(), "server QP: " + serverSide.queuePair());
            } else {
                assertEquals(-1, p.conn().queuePair().ackTimeout());
                assertEquals(-1, serverSide.queuePair().ackTimeout());
                assertEquals(-1, p.conn().queuePair().minRnrTimer());
            }
        }
        try (TestPair p = TestPair.open(transport(), CompletionMode.POLLING)) {
            int cm = p.conn().queuePair().ackTimeout();
            if (transport().isVerbs()) {
                assertTrue(cm > 0 && cm <= 31, "rdma_cm's own ack timeout: " + p.conn().queuePair());
                assertEquals(0, p.conn().queuePair().minRnrTimer(), "rdma_cm's own RNR timer: " + p.conn().queuePair());
                System.out.println("rdma_cm's ack timeout on " + p.conn().remoteAddress() + ": " + cm + " ("
                        + p.conn().queuePair().ackTimeoutDuration() + ")");
            } else {
                assertEquals(-1, cm);
            }
        }
    }

    /**
     * The traffic class each queue pair's packets carry: on verbs the client's, on both sides (rdma_cm
     * sets it on the client's path and the connection request carries it to the server's QP); on
     * tcp and shm each side's own socket's. Without one, the system's: 0 here.
     */
    @Test
    void trafficClassIsAppliedToTheQueuePair() throws Exception {
        ConnectionConfig server = ConnectionConfig.builder().trafficClass(184).build();   // DSCP 46, EF
        ConnectionConfig client = ConnectionConfig.builder().trafficClass(104).build();   // DSCP 26, AF31
        try (TestPair p = TestPair.open(transport(), CompletionMode.POLLING, server, client)) {
            Connection serverSide = p.accepted().poll(T, TimeUnit.SECONDS);
            assertNotNull(serverSide, "the server accepted");
            QueuePairInfo c = p.conn().queuePair(), s = serverSide.queuePair();
            assertEquals(104, c.trafficClass(), "client QP: " + c);
            assertEquals(transport().isVerbs() ? 104 : 184, s.trafficClass(), "server QP: " + s);
            if (transport().isVerbs()) {
                assertTrue(c.serviceLevel() >= 0 && c.serviceLevel() <= 15, "the device's service level: " + c);
                assertTrue(c.flowLabel() >= 0 && c.flowLabel() <= 0xFFFFF, "the device's flow label: " + c);
            } else {
                assertEquals(-1, c.serviceLevel(), "no service level on " + transport() + ": " + c);
                assertEquals(-1, c.flowLabel(), "no flow label on " + transport() + ": " + c);
            }
            LocalRegion buf = p.client().allocate(64);
            p.conn().write(buf, p.remote().slice(0, 64)).get(T, TimeUnit.SECONDS);   // the class does not stop the data
        }
        try (TestPair p = TestPair.open(transport(), CompletionMode.POLLING)) {
            assertEquals(0, p.conn().queuePair().trafficClass(), "the system's class: " + p.conn().queuePair());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ConnectionConfig.builder().trafficClass(256));
        assertEquals("trafficClass must be in -1..255, not 256", e.getMessage());
    }

    @Test
    void serviceLevelAndFlowLabelAreTheClientsOnBothQueuePairs() throws Exception {
        // The server's own choice is not used: the connection request carries the client's path.
        ConnectionConfig server = ConnectionConfig.builder().serviceLevel(2).flowLabel(0x00ABC).build();
        ConnectionConfig client = ConnectionConfig.builder().serviceLevel(5).flowLabel(0x12345).build();
        try (TestPair p = TestPair.open(transport(), CompletionMode.POLLING, server, client)) {
            Connection serverSide = p.accepted().poll(T, TimeUnit.SECONDS);
            assertNotNull(serverSide, "the server accepted");
            QueuePairInfo c = p.conn().queuePair(), s = serverSide.queuePair();
            if (transport().isVerbs()) {
                assertEquals(0x12345, c.flowLabel(), "client QP: " + c);
                assertEquals(0x12345, s.flowLabel(), "server QP: " + s);
                // rxe keeps no service level in its address vectors (QosVerbsTest sees it on the wire).
                assertEquals(c.serviceLevel(), s.serviceLevel(), "client " + c + ", server " + s);
            } else {
                assertEquals(-1, c.serviceLevel(), "no service level on " + transport() + ": " + c);
                assertEquals(-1, c.flowLabel(), "no flow label on " + transport() + ": " + c);
                assertEquals(-1, s.flowLabel(), "no flow label on " + transport() + ": " + s);
                assertEquals(-1, s.serviceLevel(), "no service level on " + transport() + ": " + s);
            }
            LocalRegion buf = p.client().allocate(64);
            buf.segment().fill((byte) 7);
            p.conn().write(buf, p.remote().slice(0, 64)).get(T, TimeUnit.SECONDS);   // the path carries the data
            assertEquals(7, p.exposed().segment().get(ValueLayout.JAVA_BYTE, 63));
        }
    }

    @ParameterizedTest
    @EnumSource(CompletionMode.class)
    void sendIsEchoedWithImmediate(CompletionMode mode) throws Exception {
        try (TestPair p = TestPair.open(transport(), mode)) {
            assertEquals(ConnectionState.ESTABLISHED, p.conn().state());
            assertEquals("RTS", p.conn().queuePair().state());
            assertEquals(4096, p.conn().peerReceiveBufferSize(), "the server told its receive buffer size");
            LocalRegion buf = p.client().allocate(3000);
            byte[] data = pattern(3000, 1);
            buf.segment().copyFrom(MemorySegment.ofArray(data));
            CompletableFuture<Message> reply = p.conn().receive();
            p.conn().send(buf).get(T, TimeUnit.SECONDS);
            try (Message m = reply.get(T, TimeUnit.SECONDS)) {
                assertEquals(3000, m.imm().orElseThrow());
                assertFalse(m.isWrite());
                assertArrayEquals(data, m.data().toArray(ValueLayout.JAVA_BYTE));
            }
            Connection serverSide = p.accepted().poll(T, TimeUnit.SECONDS);
            assertEquals(ConnectionState.ESTABLISHED, serverSide.state());
            assertEquals(1, p.listener().connections().size());
        }
    }

    @ParameterizedTest
    @EnumSource(CompletionMode.class)
    void writeReadAndAtomicsChangeRemoteMemoryExactly(CompletionMode mode) throws Exception {
        try (TestPair p = TestPair.open(transport(), mode)) {
            RemoteRegion remote = RemoteRegion.fromDescriptor(p.exposed().toRemote().toDescriptor());
            LocalRegion buf = p.client().allocate(4096);
            byte[] data = pattern(4096, 2);
            buf.segment().copyFrom(MemorySegment.ofArray(data));
            p.conn().write(buf, remote).get(T, TimeUnit.SECONDS);
            assertArrayEquals(data, p.exposed().segment().asSlice(0, 4096).toArray(ValueLayout.JAVA_BYTE));

            p.exposed().segment().asSlice(4096, 512).copyFrom(MemorySegment.ofArray(pattern(512, 3)));
            LocalRegion into = p.client().allocate(512);
            p.conn().read(remote.slice(4096, 512), into).get(T, TimeUnit.SECONDS);
            assertArrayEquals(pattern(512, 3), into.segment().toArray(ValueLayout.JAVA_BYTE));

            RemoteRegion word = remote.slice(8000, 8);
            p.exposed().segment().set(ValueLayout.JAVA_LONG, 8000, 41L);
            assertEquals(41L, p.conn().fetchAndAdd(word, 1).get(T, TimeUnit.SECONDS));
            assertEquals(42L, p.exposed().segment().get(ValueLayout.JAVA_LONG, 8000));
            assertEquals(42L, p.conn().compareAndSwap(word, 7, 99).get(T, TimeUnit.SECONDS), "no swap on mismatch");
            assertEquals(42L, p.exposed().segment().get(ValueLayout.JAVA_LONG, 8000));
            assertEquals(42L, p.conn().compareAndSwapSync(word, 42, 99));
            assertEquals(99L, p.exposed().segment().get(ValueLayout.JAVA_LONG, 8000));

            // The allocation-free form, and the blocking one.
            CompletableFuture<Long> viaHandler = new CompletableFuture<>();
            p.conn().fetchAndAdd(word, 1, viaHandler, new CompletionHandler<Long, CompletableFuture<Long>>() {
                @Override
                public void completed(Long prior, CompletableFuture<Long> f) {
                    f.complete(prior);
                }

                @Override
                public void failed(Throwable e, CompletableFuture<Long> f) {
                    f.completeExceptionally(e);
                }
            });
            assertEquals(99L, viaHandler.get(T, TimeUnit.SECONDS));
            assertEquals(100L, p.conn().fetchAndAddSync(word, 0));
            p.conn().writeSync(buf.slice(0, 16), remote.slice(100, 16));
            assertArrayEquals(java.util.Arrays.copyOf(data, 16), p.exposed().segment().asSlice(100, 16).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void writeWithImmTellsTheReceiverTheImmAndByteCount() throws Exception {
        try (Rdma server = transport().server().build();
             Rdma client = transport().client().build()) {
            LocalRegion target = server.allocate(1024);
            LinkedBlockingQueue<Message> got = new LinkedBlockingQueue<>();
            RdmaServer l = server.listen(transport().nextServerAddress(), c -> c.receive().thenAccept(got::add));
            Connection c = client.connect(l.address());
            LocalRegion src = client.allocate(700);
            src.segment().copyFrom(MemorySegment.ofArray(pattern(700, 4)));
            c.writeWithImm(src, target.toRemote().slice(100, 700), 0xCAFE).get(T, TimeUnit.SECONDS);
            try (Message m = got.poll(T, TimeUnit.SECONDS)) {
                assertTrue(m.isWrite());
                assertEquals(0xCAFE, m.imm().orElseThrow());
                assertEquals(700, m.byteCount());
                assertEquals(0, m.data().byteSize(), "the bytes went to the region, not the receive buffer");
            }
            assertArrayEquals(pattern(700, 4), target.segment().asSlice(100, 700).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void wrongRkeyFailsWithRemoteAccessAndPutsTheConnectionInError() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
            RemoteRegion good = p.exposed().toRemote();
            RemoteRegion wrong = RemoteRegion.of(good.address(), good.length(), good.rkey() ^ 0x00ff_ff00);
            LocalRegion buf = p.client().allocate(64);
            Throwable e = cause(p.conn().write(buf, wrong));
            RemoteAccessException rae = assertInstanceOf(RemoteAccessException.class, e);
            assertEquals("IBV_WC_REM_ACCESS_ERR", rae.status());
            assertEquals(ConnectionState.ERROR, p.conn().state());
            Throwable later = cause(p.conn().write(buf, good));
            assertInstanceOf(ConnectionClosedException.class, later);
            assertTrue(later.getMessage().contains("ERROR"), later.getMessage());
        }
    }

    @Test
    void accessTheRegionDoesNotGrantIsRefusedBeforePostingAndByTheDevice() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE); Arena arena = Arena.ofShared()) {
            LocalRegion readOnly = p.server().register(arena.allocate(4096, 64), Access.LOCAL_WRITE, Access.REMOTE_READ);
            LocalRegion buf = p.client().allocate(64);
            // From its descriptor the client knows: refused here, the connection stays up.
            Throwable e = cause(p.conn().write(buf, readOnly.toRemote()));
            assertInstanceOf(RemoteAccessException.class, e);
            assertTrue(e.getMessage().contains("REMOTE_WRITE"), e.getMessage());
            assertEquals(ConnectionState.ESTABLISHED, p.conn().state());
            // Out of bounds by the descriptor: refused here too.
            Throwable oob = cause(p.conn().read(readOnly.toRemote().slice(4064, 32), buf));
            assertInstanceOf(IllegalArgumentException.class, oob);
            assertTrue(oob.getMessage().contains("exceeds the remote region"), oob.getMessage());
            assertEquals(ConnectionState.ESTABLISHED, p.conn().state());
            // Without the descriptor (a C peer's raw triple) the device refuses it.
            RemoteRegion raw = RemoteRegion.of(readOnly.address(), 4096, readOnly.rkey());
            assertInstanceOf(RemoteAccessException.class, cause(p.conn().write(buf, raw)));
            assertEquals(ConnectionState.ERROR, p.conn().state());
        }
    }

    @Test
    void messageLargerThanThePeersReceiveBufferIsRefusedBeforeSending() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE,
                ConnectionConfig.builder().receiveBufferSize(1024).build(), ConnectionConfig.defaults())) {
            assertEquals(1024, p.conn().peerReceiveBufferSize());
            Throwable e = cause(p.conn().send(p.client().allocate(1025)));
            assertInstanceOf(IllegalArgumentException.class, e);
            assertTrue(e.getMessage().contains("1025 bytes exceeds the peer's receive buffer of 1024"), e.getMessage());
            CompletableFuture<Message> reply = p.conn().receive();
            p.conn().send(p.client().allocate(1024)).get(T, TimeUnit.SECONDS);
            try (Message m = reply.get(T, TimeUnit.SECONDS)) {
                assertEquals(1024, m.byteCount());
            }
        }
    }

    @Test
    void closedConnectionFailsOperationsAndThePeerSeesTheDisconnect() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
            Connection serverSide = p.accepted().poll(T, TimeUnit.SECONDS);
            CompletableFuture<Connection> down = new CompletableFuture<>();
            serverSide.onDisconnect(down::complete);
            CompletableFuture<Message> pending = p.conn().receive();
            p.conn().close();
            assertEquals(ConnectionState.CLOSED, p.conn().state());
            assertInstanceOf(ConnectionClosedException.class, cause(pending), "an outstanding receive completes");
            Throwable e = cause(p.conn().write(p.client().allocate(8), p.exposed().toRemote()));
            assertInstanceOf(ConnectionClosedException.class, e);
            assertTrue(e.getMessage().contains("closed by this side"), e.getMessage());
            assertEquals(serverSide, down.get(T, TimeUnit.SECONDS));
            assertEquals(ConnectionState.CLOSED, serverSide.state());
            assertEquals(0, p.listener().connections().size());
        }
    }

    @Test
    void peerClosingFailsOurOperationsWithConnectionClosed() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
            Connection serverSide = p.accepted().poll(T, TimeUnit.SECONDS);
            CompletableFuture<Connection> down = new CompletableFuture<>();
            p.conn().onDisconnect(down::complete);
            CompletableFuture<Message> pending = p.conn().receive();
            serverSide.close();
            assertEquals(p.conn(), down.get(T, TimeUnit.SECONDS));
            assertInstanceOf(ConnectionClosedException.class, cause(pending));
            Throwable e = cause(p.conn().send(p.client().allocate(8)));
            assertTrue(e.getMessage().contains("disconnected"), e.getMessage());
        }
    }

    @Test
    void wrongAuthTokenIsRejectedWithAClearException() throws Exception {
        ConnectionConfig serverConfig = ConnectionConfig.builder().authToken("s3cret".getBytes(StandardCharsets.UTF_8)).build();
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE, serverConfig, serverConfig)) {
            assertEquals(ConnectionState.ESTABLISHED, p.conn().state(), "the right token is accepted");
            ConnectionConfig wrong = ConnectionConfig.builder().authToken("guess".getBytes(StandardCharsets.UTF_8)).build();
            CompletionException e = assertThrows(CompletionException.class,
                    () -> p.client().connectAsync(p.listener().address(), wrong).join());
            assertInstanceOf(ConnectionRejectedException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("authentication failed"), e.getCause().getMessage());
            assertThrows(ConnectionRejectedException.class, () -> p.client().connect(p.listener().address()), "no token at all");
        }
    }

    @Test
    void connectingWhereNobodyListensFailsWithinTheTimeout() {
        try (Rdma client = transport().client().build()) {
            InetSocketAddress nobody = transport().nextServerAddress();
            long t0 = System.nanoTime();
            RuntimeException e = assertThrows(RuntimeException.class, () -> client.connect(nobody,
                    ConnectionConfig.builder().timeout(java.time.Duration.ofSeconds(15)).build()));
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(20));
            assertTrue(e.getMessage().contains(nobody.toString()) || e.getMessage().contains(String.valueOf(nobody.getPort())),
                    e.getMessage());
        }
    }

    @Test
    void configValuesBeyondTheDeviceAreRefusedNamingTheLimit() {
        try (Rdma client = transport().client().build()) {
            ConnectionConfig tooDeep = ConnectionConfig.builder().sendQueueDepth(1 << 20).build();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> client.connect(transport().nextServerAddress(), tooDeep));
            assertTrue(e.getMessage().contains("sendQueueDepth") && e.getMessage().contains(transport().clientDevice() + "'s limit"),
                    e.getMessage());
            assertEquals(Math.min(255, client.capabilities().maxQpRdAtomic()),
                    ConnectionConfig.defaults().rdAtomicFor(client.capabilities()), "maxRdAtomic defaults to the device's");
        }
    }

    @Test
    void aMessageStaysReadableUntilItIsClosedAlsoWhenItsConnectionEndsFirst() throws Exception {
        try (TestPair p = TestPair.open(transport(), CompletionMode.ADAPTIVE)) {
            CompletableFuture<Message> reply = p.conn().receive();
            LocalRegion buf = p.client().allocate(64);
            buf.segment().fill((byte) 0x5c);
            p.conn().sendSync(buf);
            Message m = reply.get(T, TimeUnit.SECONDS);
            p.conn().close();
            assertEquals(ConnectionState.CLOSED, p.conn().state());
            assertEquals(0x5c, m.data().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 63), "its buffer outlives the connection");
            m.close();
            assertThrows(IllegalStateException.class, m::data);
        }
    }
}
