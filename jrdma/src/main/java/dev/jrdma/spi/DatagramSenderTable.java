package dev.jrdma.spi;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.Consumer;

/**
 * The senders a {@link DatagramQueuePair} has made peers for, by its own key (tcp/shm: the
 * socket address; verbs: the IP address and QP number), bounded: at most the endpoint's
 * {@code maxSenders}, the least recently seen (received from) evicted to make room for a new
 * one. A flood of senders costs at most that many peers, and never locks a new sender out.
 * What an evicted peer holds is the owner's to free ({@code onEvict}); the peer object itself
 * stays the application's, which may still send to it (see {@link DatagramQueuePair#renew}).
 *
 * <p>Not thread-safe: its queue pair guards it with the monitor that guards its peers.
 *
 * @param <K> the owner's key of a sender
 * @param <P> its peer
 */
public final class DatagramSenderTable<K, P extends DatagramPeer> {
    /** In access order: the eldest entry is the least recently seen sender. */
    private final LinkedHashMap<K, P> byKey = new LinkedHashMap<>(64, 0.75f, true);
    private final Consumer<P> onEvict;
    private long evicted;

    /**
     * An empty table.
     *
     * @param onEvict told of each peer evicted (not of those {@link #clear} drops)
     */
    public DatagramSenderTable(Consumer<P> onEvict) {
        this.onEvict = onEvict;
    }

    /**
     * The peer of {@code key}, now the most recently seen; null when there is none.
     *
     * @param key the sender's key
     * @return its peer, or null
     */
    public P seen(K key) {
        return byKey.get(key);
    }

    /**
     * Adds {@code peer} for {@code key} (which has none), evicting the least recently seen
     * senders until it fits in {@code max}.
     *
     * @param key  the sender's key
     * @param peer its new peer
     * @param max  the most senders kept, at least 1
     * @return {@code peer}
     */
    public P add(K key, P peer, int max) {
        if (max < 1) {
            throw new IllegalArgumentException("a sender table keeps at least 1 sender, not " + max);
        }
        Iterator<P> eldest = byKey.values().iterator();
        while (byKey.size() >= max && eldest.hasNext()) {
            P out = eldest.next();
            eldest.remove();
            evicted++;
            onEvict.accept(out);
        }
        byKey.put(key, peer);
        return peer;
    }

    /** {@return the senders kept now} */
    public int size() {
        return byKey.size();
    }

    /** {@return the senders evicted to make room for others, in the table's life} */
    public long evicted() {
        return evicted;
    }

    /** Empties the table, returning what it held (without telling {@code onEvict}): for a close. */
    public List<P> clear() {
        List<P> all = new ArrayList<>(byKey.values());
        byKey.clear();
        return all;
    }
}
