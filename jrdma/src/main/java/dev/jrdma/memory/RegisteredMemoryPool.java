package dev.jrdma.memory;

import dev.jrdma.jfr.JrdmaEvents;
import dev.jrdma.os.Errno;
import dev.jrdma.os.LibC;
import dev.jrdma.spi.AccessFlags;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.MemoryRegistration;
import dev.jrdma.spi.ShareableMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Registered memory without a registration per buffer: chunks of {@value #CHUNK_BYTES} bytes are
 * registered once with one device (its protection domain) and one set of access flags, and cut
 * into blocks of a {@link SizeClasses size class} each (a slab per class). A request larger than
 * the largest class gets a registration of its own, dropped when it is given back.
 *
 * <p>Free blocks of a class wait in a stack of the pool's, under that class's lock. Classes up to
 * 32 KiB also have a small stack per thread that takes and gives blocks without a lock, and
 * trades half of itself with the pool's stack when it runs empty or full; the stack of a thread
 * that ends goes back to the pool once the thread's cache is collected. A block is freed to the stack of the thread that
 * frees it, as in jemalloc's thread caches.
 *
 * <p>The pool grows to its high-water mark and gives its memory back when it is closed; closing
 * it while blocks are lent makes their segments unusable (they belong to the chunks' arenas), so
 * nothing can touch freed memory through them.
 */
public final class RegisteredMemoryPool implements AutoCloseable {
    /** The bytes of one chunk, registered at once. */
    public static final long CHUNK_BYTES = 4L << 20;
    /** Blocks a thread keeps per class, and half of it: what it trades with the pool at once. */
    static final int THREAD_CACHE_BLOCKS = 32, TRADE = THREAD_CACHE_BLOCKS / 2;

    private final Device device;
    private final int access;
    private final ClassStack[] stacks = new ClassStack[SizeClasses.COUNT];
    private final ThreadLocal<ThreadCache> caches;
    private final Object growLock = new Object();
    /** Chunks by index; replaced (never changed in place) under growLock. */
    private volatile PoolChunk[] chunks = new PoolChunk[16];
    private int chunkCount;
    private long reservedBytes;
    private final Set<PoolChunk> large = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    private final boolean hugePages;
    /** Huge pages were asked for and the kernel gave none: normal pages from then on (said once). */
    private volatile boolean noHugePages;
    private volatile boolean hugePagesUsed;
    private static final long HUGE_PAGE = 2L << 20;
    /** Caches of threads that may have ended: they come here once collected, and their blocks go back. */
    private final ReferenceQueue<ThreadCache> endedThreads = new ReferenceQueue<>();
    private final Set<CacheReference> cacheReferences = ConcurrentHashMap.newKeySet();

    /**
     * A pool of memory registered on {@code device} with {@code access} ({@code AccessFlags}
     * bits). Chunks come from the device's shareable memory when it has some (shm: memfds that
     * same-host peers map), else from native memory of the pool's own.
     */
    public RegisteredMemoryPool(Device device, int access) {
        this(device, access, false);
    }

    /**
     * As {@link #RegisteredMemoryPool(Device, int)}; with {@code hugePages}, chunks of memory of
     * the pool's own are 2 MiB huge pages (fewer TLB misses for the CPU, fewer page entries for
     * the device to translate) while the kernel has them reserved (vm.nr_hugepages); when it has
     * none, or for a device's shareable memory (shm: a peer maps regions at 4 KiB offsets, which
     * huge pages do not allow), normal pages, said once in the log.
     */
    public RegisteredMemoryPool(Device device, int access, boolean hugePages) {
        this.device = device;
        this.access = access;
        this.hugePages = hugePages;
        for (int c = 0; c < stacks.length; c++) {
            stacks[c] = new ClassStack();
        }
        this.caches = ThreadLocal.withInitial(() -> {
            Magazines m = new Magazines();
            ThreadCache holder = new ThreadCache(m);
            // When the thread ends, its holder goes and the reference is queued: the blocks go
            // back on a later slow path (no Cleaner: that would be a thread of our own).
            cacheReferences.add(new CacheReference(holder, m, endedThreads));
            return holder;
        });
    }

    /**
     * A block of at least {@code size} bytes; its segment is {@code size} bytes long. Zeroed
     * when {@code zero}; otherwise it holds whatever the block's last user left there.
     *
     * @throws IllegalStateException when the pool is closed
     */
    public PooledBlock allocate(long size, boolean zero) {
        if (size <= 0) {
            throw new IllegalArgumentException("size must be positive, not " + size);
        }
        checkOpen();
        int c = SizeClasses.classOf(size);
        if (c < 0) {
            return allocateLarge(size);
        }
        long handle;
        if (SizeClasses.sizeOf(c) <= SizeClasses.THREAD_CACHED_MAX) {
            Magazines m = caches.get().magazines;
            if (m.count[c] == 0) {
                reclaimEndedThreads();
                refill(c, m);
            }
            handle = m.blocks[c][--m.count[c]];
        } else {
            handle = stacks[c].take(this, c);
        }
        PoolChunk chunk = chunks[(int) (handle >>> 32)];
        int block = (int) handle;
        MemorySegment segment = chunk.memory.asSlice(block * chunk.blockSize, size);
        if (chunk.used[block] == 0) {
            chunk.used[block] = 1;   // first use: still the chunk's zeroed memory
        } else if (zero) {
            segment.fill((byte) 0);
        }
        return new PooledBlock(this, chunk, block, segment);
    }

    /** Called once per block, by {@link PooledBlock#close}. */
    void free(PooledBlock b) {
        PoolChunk chunk = b.chunk;
        if (chunk.sizeClass < 0) {
            if (large.remove(chunk)) {
                chunk.free();
            }
            return;
        }
        if (closed) {
            return;   // its chunk is gone with the pool
        }
        int c = chunk.sizeClass;
        long handle = ((long) chunk.index << 32) | b.block;
        if (SizeClasses.sizeOf(c) <= SizeClasses.THREAD_CACHED_MAX) {
            Magazines m = caches.get().magazines;
            if (m.count[c] == THREAD_CACHE_BLOCKS) {
                stacks[c].give(m.blocks[c], m.count[c] - TRADE, TRADE);
                m.count[c] -= TRADE;
            }
            m.blocks[c][m.count[c]++] = handle;
        } else {
            stacks[c].give(new long[] {handle}, 0, 1);
        }
    }

    private void refill(int c, Magazines m) {
        m.count[c] = stacks[c].takeMany(this, c, m.blocks[c], TRADE);
    }

    private PooledBlock allocateLarge(long size) {
        long bytes = (size + 4095) & ~4095L;
        PoolChunk chunk = newChunk(-1, -1, bytes, bytes);
        large.add(chunk);
        if (closed && large.remove(chunk)) {
            chunk.free();
            checkOpen();
        }
        chunk.used[0] = 1;
        return new PooledBlock(this, chunk, 0, chunk.memory.asSlice(0, size));
    }

    /** Registers a new chunk; a class's blocks go to the caller (under that class's lock). */
    private PoolChunk newChunk(int index, int sizeClass, long bytes, long blockSize) {
        ShareableMemory shared = device.allocateShareable(bytes);
        AutoCloseable backing;
        MemorySegment memory;
        if (shared != null) {
            if (hugePages && !noHugePages) {
                noHugePages = true;
                System.getLogger("dev.jrdma").log(System.Logger.Level.INFO, "huge pages: not for " + device.name()
                        + "'s shareable memory (a same-host peer maps regions at 4 KiB offsets); the pool uses normal pages");
            }
            backing = shared;
            memory = shared.segment().asSlice(0, bytes);
        } else if (hugePages && !noHugePages && (memory = hugePageMemory(bytes)) != null) {
            long at = memory.address(), length = memory.byteSize();
            Arena arena = Arena.ofShared();
            memory = memory.reinterpret(arena, m -> LibC.munmap(at, length)).asSlice(0, bytes);
            backing = arena;
        } else {
            Arena arena = Arena.ofShared();
            backing = arena;
            try {
                memory = arena.allocate(bytes, 4096);
            } catch (RuntimeException | OutOfMemoryError e) {
                arena.close();
                throw e;
            }
        }
        MemoryRegistration registration;
        try {
            registration = device.register(memory, access);
        } catch (RuntimeException e) {
            try {
                backing.close();
            } catch (Exception suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        JrdmaEvents.regionRegistered(memory.address(), memory.byteSize(), AccessFlags.names(access), "pool chunk",
                device.name());
        return new PoolChunk(index, sizeClass, blockSize, memory, registration, backing);
    }

    /** Huge-page memory of at least {@code bytes} (whole huge pages), or null when the kernel has none (said once). */
    private MemorySegment hugePageMemory(long bytes) {
        long rounded = (bytes + HUGE_PAGE - 1) & -HUGE_PAGE;
        long at = LibC.mmapHugePages(rounded);
        if (at < 0) {
            noHugePages = true;
            System.getLogger("dev.jrdma").log(System.Logger.Level.WARNING, "huge pages: the kernel gave none for "
                    + rounded + " bytes (" + Errno.name((int) -at)
                    + "; vm.nr_hugepages reserves them): the pool uses normal pages");
            return null;
        }
        hugePagesUsed = true;
        return MemorySegment.ofAddress(at).reinterpret(rounded);
    }

    /** Whether any chunk of this pool is in huge pages. */
    public boolean hugePagesInUse() {
        return hugePagesUsed;
    }

    /** A new chunk of class {@code c}, indexed; its block handles, lowest address last (taken first). */
    long[] grow(int c) {
        synchronized (growLock) {
            checkOpen();
            PoolChunk chunk = newChunk(chunkCount, c, CHUNK_BYTES, SizeClasses.sizeOf(c));
            PoolChunk[] all = chunks;
            if (chunkCount == all.length) {
                all = Arrays.copyOf(all, all.length * 2);
            }
            all[chunkCount++] = chunk;
            reservedBytes += CHUNK_BYTES;
            chunks = all;
            long[] handles = new long[chunk.blocks()];
            for (int i = 0; i < handles.length; i++) {
                handles[i] = ((long) chunk.index << 32) | (handles.length - 1 - i);
            }
            return handles;
        }
    }

    /** Gives back the cached blocks of threads that ended; outside any lock of the pool's. */
    private void reclaimEndedThreads() {
        java.lang.ref.Reference<? extends ThreadCache> r;
        while ((r = endedThreads.poll()) != null) {
            CacheReference ended = (CacheReference) r;
            cacheReferences.remove(ended);
            giveBack(ended.magazines);
        }
    }

    /** Gives this thread's cached blocks back to the pool (a thread about to end, or a test). */
    public void flushThreadCache() {
        giveBack(caches.get().magazines);
    }

    private void giveBack(Magazines m) {
        if (closed) {
            return;
        }
        for (int c = 0; c < SizeClasses.COUNT; c++) {
            if (m.count[c] > 0) {
                stacks[c].give(m.blocks[c], 0, m.count[c]);
                m.count[c] = 0;
            }
        }
    }

    /** What the pool holds now. */
    public Stats stats() {
        reclaimEndedThreads();
        long free = 0;
        for (ClassStack s : stacks) {
            synchronized (s) {
                free += s.size;
            }
        }
        synchronized (growLock) {
            int blocks = 0;
            for (int i = 0; i < chunkCount; i++) {
                blocks += chunks[i].blocks();
            }
            return new Stats(chunkCount, reservedBytes, blocks, free, large.size());
        }
    }

    /**
     * The pool's state: chunks registered, their bytes, the blocks they are cut into, how many
     * wait in the pool's stacks (not counting threads' caches), and large blocks lent.
     */
    public record Stats(int chunks, long reservedBytes, long blocks, long freeInPool, int largeBlocks) {
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the registered-memory pool is closed");
        }
    }

    /** Deregisters and frees every chunk; blocks still lent become unusable. */
    @Override
    public void close() {
        PoolChunk[] all;
        int n;
        synchronized (growLock) {
            if (closed) {
                return;
            }
            closed = true;
            cacheReferences.clear();
            all = chunks;
            n = chunkCount;
        }
        RuntimeException failure = null;
        for (int i = 0; i < n; i++) {
            try {
                all[i].free();
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
        }
        for (PoolChunk c : large) {
            if (large.remove(c)) {
                try {
                    c.free();
                } catch (RuntimeException e) {
                    failure = failure == null ? e : failure;
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** The free blocks of one class, as handles (chunk index << 32 | block). */
    private static final class ClassStack {
        long[] handles = new long[64];
        int size;

        synchronized long take(RegisteredMemoryPool pool, int c) {
            if (size == 0) {
                push(pool.grow(c));
            }
            return handles[--size];
        }

        synchronized int takeMany(RegisteredMemoryPool pool, int c, long[] into, int max) {
            if (size == 0) {
                push(pool.grow(c));
            }
            int n = Math.min(max, size);
            System.arraycopy(handles, size - n, into, 0, n);
            size -= n;
            return n;
        }

        synchronized void give(long[] from, int offset, int n) {
            ensure(size + n);
            System.arraycopy(from, offset, handles, size, n);
            size += n;
        }

        private void push(long[] more) {
            ensure(size + more.length);
            System.arraycopy(more, 0, handles, size, more.length);
            size += more.length;
        }

        private void ensure(int capacity) {
            if (capacity > handles.length) {
                handles = Arrays.copyOf(handles, Math.max(capacity, handles.length * 2));
            }
        }
    }

    /** A thread's cached blocks per class; only that thread touches it while it lives. */
    private static final class Magazines {
        final long[][] blocks = new long[SizeClasses.COUNT][THREAD_CACHE_BLOCKS];
        final int[] count = new int[SizeClasses.COUNT];
    }

    /** The weak reference to a thread's cache, with what must go back when the thread is gone. */
    private static final class CacheReference extends WeakReference<ThreadCache> {
        final Magazines magazines;

        CacheReference(ThreadCache cache, Magazines magazines, ReferenceQueue<ThreadCache> queue) {
            super(cache, queue);
            this.magazines = magazines;
        }
    }

    /** What a thread's ThreadLocal holds; when it is collected, its magazines go back to the pool. */
    private static final class ThreadCache {
        final Magazines magazines;

        ThreadCache(Magazines magazines) {
            this.magazines = magazines;
        }
    }
}
