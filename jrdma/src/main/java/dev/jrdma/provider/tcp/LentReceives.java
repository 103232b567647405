package dev.jrdma.provider.tcp;

/**
 * Which queue pair's share of a {@link TcpSharedReceiveQueue} each receive handed out went to,
 * by work request id, until the owner posts that id again (the buffer came back): what lets the
 * queue count the buffers each connection holds. An open-addressed table of fixed size (linear
 * probing, deletion by backward shift), so that handing out and taking back allocate nothing.
 * A receive beyond its room is not recorded (its connection's count does not include it). Guarded
 * by the shared queue's lock.
 *
 * @param <T> the holder
 */
final class LentReceives<T> {
    private final long[] ids;
    private final Object[] holders;
    private final int mask;
    private final int room;
    private int size;

    /** Room for {@code capacity} receives lent at once (a table of twice that, rounded up to a power of two). */
    LentReceives(int capacity) {
        int slots = Integer.highestOneBit(Math.max(2, capacity) * 2 - 1) << 1;
        ids = new long[slots];
        holders = new Object[slots];
        mask = slots - 1;
        room = slots / 2;
    }

    private int home(long id) {
        long h = id * 0x9E3779B97F4A7C15L;
        return (int) (h >>> 40) & mask;
    }

    /** Records that {@code id} went to {@code holder}; false (not recorded) when it is full. */
    boolean lend(long id, T holder) {
        if (size == room) {
            return false;
        }
        int i = home(id);
        while (holders[i] != null) {
            i = (i + 1) & mask;
        }
        ids[i] = id;
        holders[i] = holder;
        size++;
        return true;
    }

    /** {@code id} came back: who held it (its record removed), or null when it was not recorded. */
    @SuppressWarnings("unchecked")
    T giveBack(long id) {
        int i = home(id);
        while (holders[i] != null) {
            if (ids[i] == id) {
                T was = (T) holders[i];
                remove(i);
                return was;
            }
            i = (i + 1) & mask;
        }
        return null;
    }

    /** Removes slot {@code hole}, moving later entries of its probe run back so that none is lost. */
    private void remove(int hole) {
        holders[hole] = null;
        size--;
        for (int i = (hole + 1) & mask; holders[i] != null; i = (i + 1) & mask) {
            int h = home(ids[i]);
            // Move i into the hole unless its home lies cyclically in (hole, i].
            boolean stays = hole <= i ? (hole < h && h <= i) : (hole < h || h <= i);
            if (!stays) {
                ids[hole] = ids[i];
                holders[hole] = holders[i];
                holders[i] = null;
                hole = i;
            }
        }
    }

    /** Receives recorded now. */
    int size() {
        return size;
    }

    /** Forgets every record (the queue closed). */
    void clear() {
        java.util.Arrays.fill(holders, null);
        size = 0;
    }
}
