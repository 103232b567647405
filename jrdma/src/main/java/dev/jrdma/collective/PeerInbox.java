package dev.jrdma.collective;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The group's messages from one member, matched by immediate value (kind and collective
 * number). A message may come before this member asked for it (the peer started the collective
 * first): it waits here until asked for, within a budget of messages and bytes
 * ({@link GroupConfig#inboxMessages()}, {@link GroupConfig#inboxBytes()}): a message past it is
 * not kept, and {@link #deliver} says so, for the group to fail that member's connection. Once
 * the member is lost, every wait fails.
 */
final class PeerInbox {
    private static final byte[] EMPTY = new byte[0];
    private final Map<Integer, byte[]> arrived = new HashMap<>();
    private final Map<Integer, CompletableFuture<byte[]>> waiting = new HashMap<>();
    private final int maxMessages;
    private final long maxBytes;
    /** What {@code arrived} holds, counted as the budget counts it. */
    private long heldBytes;
    private RuntimeException lost;

    PeerInbox(int maxMessages, long maxBytes) {
        this.maxMessages = maxMessages;
        this.maxBytes = maxBytes;
    }

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
            heldBytes -= cost(got);
            f = CompletableFuture.completedFuture(got);
        }
        return f;
    }

    /**
     * On the IO thread: a message came. {@return null when it was handed over or kept, else why it
     * was not: keeping it would pass the budget, or a message with the same immediate value waits
     * already (an honest member sends each once)}
     */
    String deliver(int imm, byte[] payload) {
        byte[] p = payload == null ? EMPTY : payload;
        CompletableFuture<byte[]> f;
        synchronized (this) {
            f = waiting.remove(imm);
            if (f == null) {
                if (lost != null) {
                    return null;   // the member is gone: nothing is kept for it any more
                }
                if (arrived.containsKey(imm)) {
                    return "a second " + GroupWireDescriptor.kindName(GroupWireDescriptor.kind(imm)) + " for collective "
                            + (imm & GroupWireDescriptor.SEQ_MASK) + " before the first was asked for";
                }
                if (arrived.size() >= maxMessages || heldBytes + cost(p) > maxBytes) {
                    return (arrived.size() + 1) + " messages (" + (heldBytes + cost(p)) + " bytes) not asked for yet, past the"
                            + " inbox budget of " + maxMessages + " messages and " + maxBytes + " bytes"
                            + " (GroupConfig.withInboxLimits)";
                }
                arrived.put(imm, p);
                heldBytes += cost(p);
                return null;
            }
        }
        f.complete(p);   // outside the lock: it runs what waits on it
        return null;
    }

    /**
     * A collective numbered {@code seq} starts: messages kept for collectives before it will never be
     * asked for (that collective ended on this member, maybe by failure), so they leave the budget.
     */
    synchronized void forgetBefore(int seq) {
        if (arrived.isEmpty()) {
            return;
        }
        var it = arrived.entrySet().iterator();
        while (it.hasNext()) {
            var e = it.next();
            int imm = e.getKey();
            int behind = (seq - imm) & GroupWireDescriptor.SEQ_MASK;
            if (GroupWireDescriptor.kind(imm) != GroupWireDescriptor.SYNC && behind != 0 && behind < GroupWireDescriptor.SEQ_MASK / 2) {
                heldBytes -= cost(e.getValue());
                it.remove();
            }
        }
    }

    /** The member is gone: every wait, now and later, fails with {@code why}. {@return false when it was gone already} */
    boolean lose(RuntimeException why) {
        Map<Integer, CompletableFuture<byte[]>> failed;
        synchronized (this) {
            if (lost != null) {
                return false;
            }
            lost = why;
            failed = new HashMap<>(waiting);
            waiting.clear();
            arrived.clear();
            heldBytes = 0;
        }
        failed.values().forEach(f -> f.completeExceptionally(why));
        return true;
    }

    /** The messages kept, not asked for yet. */
    synchronized int kept() {
        return arrived.size();
    }

    /** The bytes they are counted for. */
    synchronized long keptBytes() {
        return heldBytes;
    }

    private static long cost(byte[] payload) {
        return payload.length + (long) GroupConfig.INBOX_ENTRY_BYTES;
    }
}
