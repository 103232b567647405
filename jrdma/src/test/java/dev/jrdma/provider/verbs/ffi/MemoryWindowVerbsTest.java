package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Type 2 memory windows at the level of the bindings, on Soft-RoCE: what {@code toRemoteFor} on
 * verbs is to be built on. A window is bound on the server's QP over part of a registration made
 * with MW_BIND; the client writes through its key; a local invalidate revokes it; the window is
 * bound again under the next key (which only works because jrdma writes the new key back into
 * {@code ibv_mw}: rxe's provider does not); the old key is refused then. And what a bind and an
 * invalidate cost against a registration and a deregistration, printed.
 */
@Tag("verbs")
class MemoryWindowVerbsTest {
    private static final int T = 20_000;

    @Test
    void aWindowIsBoundWrittenThroughInvalidatedAndBoundAgainUnderTheNextKey() {
        try (RcPair pair = RcPair.connect()) {
            RcEndpoint server = pair.server, client = pair.client;
            MemorySegment mr = server.register(4096, IbvMr.ACCESS_LOCAL_WRITE | IbvMr.ACCESS_MW_BIND);
            MemorySegment src = client.register(64, IbvMr.ACCESS_LOCAL_WRITE);
            RcEndpoint.bytes(src).set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
            long window = IbvMr.addr(mr) + 1024;
            MemorySegment mw = LibIbverbs.allocMw(IbvContext.allocMwFn(server.context), server.pd, LibIbverbs.MW_TYPE_2);
            try {
                int k0 = IbvMw.rkey(mw);
                int k1 = IbvMw.nextRkey(k0);
                assertNotEquals(k0, k1);
                assertEquals(0, server.postBindMw(1, mw, k1, mr, window, 1024,
                        IbvMr.ACCESS_REMOTE_WRITE | IbvMr.ACCESS_REMOTE_READ));
                RcEndpoint.Wc bound = server.pollOne(T);
                assertEquals(IbvWc.SUCCESS, bound.status(), bound.statusName());
                assertEquals(IbvWc.OP_BIND_MW, bound.opcode());
                System.out.printf("[mw] key after the bind, as rxe left it in ibv_mw: 0x%x (bound 0x%x)%n", IbvMw.rkey(mw), k1);
                IbvMw.rkey(mw, k1);

                assertEquals(0, client.postSend(2, IbvSendWr.WR_RDMA_WRITE, src, 0, 8, window + 8, k1, 0, 0, 0));
                RcEndpoint.Wc wrote = client.pollOne(T);
                assertEquals(IbvWc.SUCCESS, wrote.status(), wrote.statusName());
                assertEquals(0x1122334455667788L, RcEndpoint.bytes(mr).get(ValueLayout.JAVA_LONG, 1024 + 8));

                assertEquals(0, server.postLocalInv(3, k1));
                RcEndpoint.Wc invalidated = server.pollOne(T);
                assertEquals(IbvWc.SUCCESS, invalidated.status(), invalidated.statusName());
                assertEquals(IbvWc.OP_LOCAL_INV, invalidated.opcode());

                int k2 = IbvMw.nextRkey(k1);
                assertEquals(0, server.postBindMw(4, mw, k2, mr, window, 512, IbvMr.ACCESS_REMOTE_WRITE));
                RcEndpoint.Wc again = server.pollOne(T);
                assertEquals(IbvWc.SUCCESS, again.status(), "bound again under the next key: " + again.statusName());
                IbvMw.rkey(mw, k2);
                assertEquals(0, client.postSend(5, IbvSendWr.WR_RDMA_WRITE, src, 0, 8, window + 16, k2, 0, 0, 0));
                assertEquals(IbvWc.SUCCESS, client.pollOne(T).status());

                // The old key names nothing now: the write is refused (and the client's QP errs).
                assertEquals(0, client.postSend(6, IbvSendWr.WR_RDMA_WRITE, src, 0, 8, window + 24, k1, 0, 0, 0));
                RcEndpoint.Wc refused = client.pollOne(T);
                assertEquals(IbvWc.REM_ACCESS_ERR, refused.status(), refused.statusName());
                assertEquals(0L, RcEndpoint.bytes(mr).get(ValueLayout.JAVA_LONG, 1024 + 24), "nothing was written");
            } finally {
                LibIbverbs.deallocMw(IbvContext.deallocMwFn(server.context), mw);   // before the PD goes with the pair
            }
        }
    }

    /** Deallocating a bound window revokes its key at once: what toRemoteFor's revocation relies on. */
    @Test
    void deallocatingABoundWindowRevokesItsKey() {
        try (RcPair pair = RcPair.connect()) {
            RcEndpoint server = pair.server, client = pair.client;
            MemorySegment mr = server.register(4096, IbvMr.ACCESS_LOCAL_WRITE | IbvMr.ACCESS_MW_BIND);
            MemorySegment src = client.register(64, IbvMr.ACCESS_LOCAL_WRITE);
            MemorySegment mw = LibIbverbs.allocMw(IbvContext.allocMwFn(server.context), server.pd, LibIbverbs.MW_TYPE_2);
            boolean freed = false;
            try {
                int k = IbvMw.nextRkey(IbvMw.rkey(mw));
                assertEquals(0, server.postBindMw(1, mw, k, mr, IbvMr.addr(mr), 4096, IbvMr.ACCESS_REMOTE_WRITE));
                assertEquals(IbvWc.SUCCESS, server.pollOne(T).status());
                IbvMw.rkey(mw, k);
                assertEquals(0, client.postSend(2, IbvSendWr.WR_RDMA_WRITE, src, 0, 8, IbvMr.addr(mr), k, 0, 0, 0));
                assertEquals(IbvWc.SUCCESS, client.pollOne(T).status(), "written through the window");
                LibIbverbs.deallocMw(IbvContext.deallocMwFn(server.context), mw);
                freed = true;
                assertEquals(0, client.postSend(3, IbvSendWr.WR_RDMA_WRITE, src, 0, 8, IbvMr.addr(mr) + 8, k, 0, 0, 0));
                RcEndpoint.Wc refused = client.pollOne(T);
                assertEquals(IbvWc.REM_ACCESS_ERR, refused.status(), "after ibv_dealloc_mw: " + refused.statusName());
            } finally {
                if (!freed) {
                    LibIbverbs.deallocMw(IbvContext.deallocMwFn(server.context), mw);
                }
            }
        }
    }

    /** A bind and an invalidate against an ibv_reg_mr and ibv_dereg_mr of the same 64 KiB, each waited for; printed. */
    @Test
    void bindAndInvalidateAgainstRegisterAndDeregister() {
        int rounds = 200;
        try (RcPair pair = RcPair.connect()) {
            RcEndpoint server = pair.server;
            MemorySegment mr = server.register(1 << 16, IbvMr.ACCESS_LOCAL_WRITE | IbvMr.ACCESS_MW_BIND);
            MemorySegment mw = LibIbverbs.allocMw(IbvContext.allocMwFn(server.context), server.pd, LibIbverbs.MW_TYPE_2);
            try {
                long t0 = System.nanoTime();
                for (int i = 0; i < rounds; i++) {
                    int k = IbvMw.nextRkey(IbvMw.rkey(mw));
                    assertEquals(0, server.postBindMw(i, mw, k, mr, IbvMr.addr(mr), 1 << 16, IbvMr.ACCESS_REMOTE_WRITE));
                    assertEquals(IbvWc.SUCCESS, server.pollOne(T).status());
                    IbvMw.rkey(mw, k);
                    assertEquals(0, server.postLocalInv(i, k));
                    assertEquals(IbvWc.SUCCESS, server.pollOne(T).status());
                }
                long window = System.nanoTime() - t0;
                MemorySegment buf = java.lang.foreign.Arena.ofAuto().allocate(1 << 16, 4096);
                long t1 = System.nanoTime();
                for (int i = 0; i < rounds; i++) {
                    LibIbverbs.deregMr(LibIbverbs.regMr(server.pd, buf, IbvMr.ACCESS_LOCAL_WRITE | IbvMr.ACCESS_REMOTE_WRITE));
                }
                long register = System.nanoTime() - t1;
                System.out.printf("[mw] 64 KiB, %d rounds: bind+invalidate %.1f us, reg_mr+dereg_mr %.1f us a round%n",
                        rounds, window / 1e3 / rounds, register / 1e3 / rounds);
            } finally {
                LibIbverbs.deallocMw(IbvContext.deallocMwFn(server.context), mw);
            }
        }
    }
}
