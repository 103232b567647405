package dev.jrdma.provider.tcp;

import java.security.SecureRandom;

/**
 * The keys a tcp device hands out: a secret 32-bit permutation of (generation, slot). A slot is
 * an index into the registration table; its generation grows each time the slot is reused, and
 * a slot whose generation would wrap is retired, never reused. So:
 * <ul>
 *   <li>a key is never issued twice in the life of the device (a closed key never names memory
 *       again), since (generation, slot) never repeats and the permutation is one to one;</li>
 *   <li>keys look random to a peer: knowing its own keys, it learns nothing useful about others',
 *       and a guess hits a live key with probability (live keys) / 2<sup>32</sup> &mdash; and a
 *       wrong guess ends the guesser's connection (remote access error);</li>
 *   <li>finding the slot of a key costs a few multiplications ({@link #slotOf}), no map.</li>
 * </ul>
 * The permutation is a four-round Feistel network over 16-bit halves with round keys drawn from
 * {@link SecureRandom} per device: not a cipher to publish, but more than enough to make
 * enumeration hopeless over a connection that dies at the first miss.
 */
final class TcpMemoryKeys {
    static final int SLOT_BITS = 20;
    static final int SLOT_MASK = (1 << SLOT_BITS) - 1;
    /** Generations per slot before it is retired. */
    static final int GENERATIONS = 1 << (32 - SLOT_BITS);
    private static final int ROUNDS = 4;

    private final int[] roundKeys = new int[ROUNDS];

    TcpMemoryKeys() {
        SecureRandom random = new SecureRandom();
        for (int i = 0; i < ROUNDS; i++) {
            roundKeys[i] = random.nextInt();
        }
    }

    /** The key for {@code generation} of {@code slot}. */
    int key(int slot, int generation) {
        int x = (generation << SLOT_BITS) | slot;
        int l = x >>> 16, r = x & 0xFFFF;
        for (int i = 0; i < ROUNDS; i++) {
            int t = l ^ round(r, roundKeys[i]);
            l = r;
            r = t;
        }
        return (l << 16) | r;
    }

    /** The slot a key was made for (any int names some slot: the caller checks the key stored there). */
    int slotOf(int key) {
        return unpermute(key) & SLOT_MASK;
    }

    /** The generation of its slot a key was made for (as {@link #slotOf}, any int names one). */
    int generationOf(int key) {
        return unpermute(key) >>> SLOT_BITS;
    }

    private int unpermute(int key) {
        int l = key >>> 16, r = key & 0xFFFF;
        for (int i = ROUNDS - 1; i >= 0; i--) {
            int t = r ^ round(l, roundKeys[i]);
            r = l;
            l = t;
        }
        return (l << 16) | r;
    }

    private static int round(int half, int key) {
        int h = (half ^ key) * 0x9E3779B1;
        h ^= h >>> 15;
        h *= 0x85EBCA77;
        h ^= h >>> 13;
        return h & 0xFFFF;
    }
}
