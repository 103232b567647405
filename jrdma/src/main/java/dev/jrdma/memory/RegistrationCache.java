package dev.jrdma.memory;

import dev.jrdma.spi.Device;
import dev.jrdma.spi.MemoryRegistration;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.Map;

/**
 * Registrations of the application's own memory, shared by range: registering the same bytes
 * with the same access again returns a new handle on the registration already there (no
 * system call, no pinning), and the device registration is dropped when the last handle
 * closes. So the rkey of a range stays valid while any region of it is open.
 */
public final class RegistrationCache {
    private final Device device;
    private final Map<Key, Entry> entries = new HashMap<>();

    public RegistrationCache(Device device) {
        this.device = device;
    }

    private record Key(long address, long length, int access) {
    }

    /** The registration and how many open handles share it; guarded by the cache. */
    private static final class Entry {
        final MemoryRegistration registration;
        int handles;

        Entry(MemoryRegistration registration) {
            this.registration = registration;
        }
    }

    /** A handle on {@code memory} registered with {@code access}: the cached registration, or a new one. */
    public MemoryRegistration register(MemorySegment memory, int access) {
        Key key = new Key(memory.address(), memory.byteSize(), access);
        synchronized (this) {
            Entry e = entries.get(key);
            if (e != null) {
                e.handles++;
                return new Handle(key, e);
            }
        }
        // Registering may take long (pinning): not under the lock. Two threads registering the
        // same new range at once both register; the second keeps its own (correct, just not shared).
        MemoryRegistration fresh = device.register(memory, access);
        synchronized (this) {
            Entry e = entries.get(key);
            if (e == null) {
                e = new Entry(fresh);
                entries.put(key, e);
                e.handles = 1;
                return new Handle(key, e);
            }
        }
        return fresh;
    }

    /** Open device registrations held (for tests). */
    public synchronized int size() {
        return entries.size();
    }

    /** One handle less; true when it was the last (the device registration is dropped). */
    private boolean release(Key key, Entry e) {
        synchronized (this) {
            if (--e.handles > 0) {
                return false;
            }
            entries.remove(key, e);
        }
        e.registration.close();
        return true;
    }

    /** One region's hold on a shared registration. */
    private final class Handle implements MemoryRegistration {
        private final Key key;
        private final Entry entry;
        private boolean closed;
        /** Whether this handle's close dropped the device registration (the last one); set by close. */
        private volatile boolean last;

        Handle(Key key, Entry entry) {
            this.key = key;
            this.entry = entry;
        }

        @Override
        public MemorySegment memory() {
            return entry.registration.memory();
        }

        @Override
        public int lkey() {
            return entry.registration.lkey();
        }

        @Override
        public int rkey() {
            return entry.registration.rkey();
        }

        @Override
        public int access() {
            return entry.registration.access();
        }

        @Override
        public void close() {
            synchronized (this) {
                if (closed) {
                    return;
                }
                closed = true;
            }
            last = release(key, entry);
        }

        @Override
        public void whenReleasedByPeers(Runnable then) {
            if (last) {
                entry.registration.whenReleasedByPeers(then);
            } else {
                then.run();   // still registered for the other handles: nothing was revoked
            }
        }

        @Override
        public String toString() {
            return "shared " + entry.registration;
        }
    }
}
