package dev.jrdma.collective;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The group's messages from one member, matched by immediate value (kind and collective
 * number). A message may come before this member asked for it (the peer started the collective
 * first): it waits here until asked for. Once the member is lost, every wait fails.
 */
final class PeerInbox {
    private static final byte[] EMPTY = new byte[0];
    private final Map<Integer, byte[]> arrived = new HashMap<>();
    private final Map<Integer, CompletableFuture<byte[]>> waiting = new HashMap<>();
    private RuntimeException lost;

    /** The payload of the message with {@code imm} (empty for a data arrival), when it comes. */
    CompletableFuture<byte[]> expect(int imm) {
        CompletableFuture<byte[]> f;
        synchronized (this) {
            byte[] got = arrived.remove(imm);
            if (got == null) {
                if (lost != null) {
                    return CompletableFuture.failedFuture(lost);
                }
                f = new CompletableFuture<>();
                waiting.put(imm, f);
                return f;
            }
            f = CompletableFuture.completedFuture(got);
        }
        return f;
    }

    /** On the IO thread: a message came. */
    void deliver(int imm, byte[] payload) {
        CompletableFuture<byte[]> f;
        synchronized (this) {
            f = waiting.remove(imm);
            if (f == null) {
                arrived.put(imm, payload == null ? EMPTY : payload);
                return;
            }
        }
        f.complete(payload == null ? EMPTY : payload);   // outside the lock: it runs what waits on it
    }

    /** The member is gone: every wait, now and later, fails with {@code why}. */
    void lose(RuntimeException why) {
        Map<Integer, CompletableFuture<byte[]>> failed;
        synchronized (this) {
            if (lost != null) {
                return;
            }
            lost = why;
            failed = new HashMap<>(waiting);
            waiting.clear();
            arrived.clear();
        }
        failed.values().forEach(f -> f.completeExceptionally(why));
    }

    synchronized int held() {
        return arrived.size() + waiting.size();
    }
}
