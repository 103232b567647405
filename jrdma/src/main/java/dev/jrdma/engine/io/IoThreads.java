package dev.jrdma.engine.io;

import dev.jrdma.exceptions.RdmaException;
import dev.jrdma.exceptions.RdmaTimeoutException;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.CmEventHandler;
import dev.jrdma.spi.CompletionChannel;
import dev.jrdma.spi.ConnectionLimits;
import dev.jrdma.spi.ConnectionManager;
import dev.jrdma.spi.Device;
import dev.jrdma.spi.DeviceEventHandler;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The IO threads of one {@code Rdma} with a completion channel each, and its connection manager.
 * IO thread 0 is the control thread: it serves the connection manager's events, reads the
 * device's asynchronous events, and runs the control steps (listen, connect, close).
 *
 * <p>Threads: the arrays are fixed once made, so any thread may {@link #pick}, look up and
 * {@link #execute}; the connection manager is touched on the control thread only.
 */
public final class IoThreads {
    /** The longest a control step on the control thread (listen, open an endpoint, close) may take. */
    public static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(30);
    private final IoThread[] io;
    private final CompletionChannel[] channels;
    /** Each thread's shared completion queues; null where the device gives each connection its own. */
    private final SharedCompletions[] shared;
    private final ConnectionManager cm;
    private final AtomicInteger next = new AtomicInteger();

    private IoThreads(IoThread[] io, CompletionChannel[] channels, SharedCompletions[] shared, ConnectionManager cm) {
        this.io = io;
        this.channels = channels;
        this.shared = shared;
        this.cm = cm;
    }

    /**
     * Makes the connection manager, the channels and the IO threads of {@code plan}, each thread
     * checking its channel's readiness and idle connections. On failure, closes what it made
     * (not the device) and throws.
     *
     * @param device the open device
     * @param plan   what IO to run
     * @param limits the connection manager's limits
     * @return the IO, not yet serving the connection manager ({@link #serveControl})
     */
    public static IoThreads open(Device device, IoPlan plan, ConnectionLimits limits) {
        int n = plan.count();
        IoThread[] io = new IoThread[n];
        CompletionChannel[] channels = new CompletionChannel[n];
        SharedCompletions[] shared = new SharedCompletions[n];
        int sharedDepth = device.sharedCompletionQueueDepth();
        ConnectionManager manager = null;
        try {
            manager = device.createConnectionManager(limits);
            for (int i = 0; i < n; i++) {
                channels[i] = device.createCompletionChannel();
                if (plan.pollingOnly()) {
                    channels[i].pollingOnly();   // nobody arms or sleeps on it
                }
                io[i] = thread(device, plan, i, channels[i], manager);
                if (sharedDepth > 0) {
                    shared[i] = new SharedCompletions(io[i], device, channels[i], sharedDepth);
                }
            }
            for (int i = 0; i < n; i++) {
                CompletionChannel ch = channels[i];
                IoThread t = io[i];
                if (ch.readinessDriven()) {
                    // First on its thread: which resting connections' sockets are ready, each pass.
                    t.execute(() -> t.add(ch::pollReadiness));
                }
                t.execute(() -> t.addTimer(ch::checkIdle));   // keep-alives and idle timeouts
                SharedCompletions s = shared[i];
                if (s != null) {
                    t.execute(() -> t.add(s));   // one poll a pass for all the thread's connections
                }
            }
            return new IoThreads(io, channels, shared, manager);
        } catch (RuntimeException e) {
            new IoThreads(io, channels, shared, manager).closeAfterFailedStart();
            throw e;
        }
    }

    /** IO thread {@code i} of {@code plan}, woken by its channel (and thread 0 also by the CM's and the device's fds). */
    private static IoThread thread(Device device, IoPlan plan, int i, CompletionChannel ch, ConnectionManager manager) {
        int[] fds = i != 0 ? new int[] {ch.fd()}
                : device.eventFd() < 0 ? new int[] {ch.fd(), manager.fd()} : new int[] {ch.fd(), manager.fd(), device.eventFd()};
        String name = "jrdma-io-" + device.name() + "-" + i;
        int[] cpus = plan.cpus();
        return plan.loops() > 0 ? IoThread.driven(name, fds, ch::drainEvents)
                : plan.singleThreaded() ? IoThread.confined(name, fds, ch::drainEvents, Thread.currentThread())
                : plan.threads() == 0 ? IoThread.inline(name, fds, ch::drainEvents)
                : new IoThread(name, plan.idle(), fds, ch::drainEvents, cpus.length == 0 ? -1 : cpus[i % cpus.length]);
    }

    /**
     * Has the control thread serve the connection manager's events to {@code cmEvents} and the
     * device's to {@code deviceEvents}; device events are rare, so they are read on the timer
     * (every sleep, and every 1024 idle passes).
     */
    public void serveControl(Device device, CmEventHandler cmEvents, DeviceEventHandler deviceEvents) {
        IoThread control = io[0];
        control.execute(() -> control.add(() -> cm.processEvents(cmEvents)));
        device.onEvents(deviceEvents);
        control.execute(() -> control.addTimer(device::pollEvents));
    }

    /** {@return IO thread 0: the connection manager's, and the control steps'} */
    public IoThread control() {
        return io[0];
    }

    /** {@return the connection manager; use it on the control thread} */
    public ConnectionManager cm() {
        return cm;
    }

    /** {@return the next IO thread, round robin: where a new connection or endpoint goes} */
    public IoThread pick() {
        return io[Math.floorMod(next.getAndIncrement(), io.length)];
    }

    /** {@return how many IO threads (or loops)} */
    public int count() {
        return io.length;
    }

    /** {@return IO thread {@code i}} */
    public IoThread get(int i) {
        return io[i];
    }

    /** {@return the index of {@code t}, one of these threads} */
    public int indexOf(IoThread t) {
        for (int i = 0; i < io.length; i++) {
            if (io[i] == t) {
                return i;
            }
        }
        throw new IllegalStateException();
    }

    /** {@return the completion channel of {@code t}, one of these threads} */
    public CompletionChannel channelOf(IoThread t) {
        return channels[indexOf(t)];
    }

    /**
     * {@return the completion queues {@code t}'s connections share, or null where each connection
     * has its own (the software providers)}
     */
    public SharedCompletions sharedOf(IoThread t) {
        return shared[indexOf(t)];
    }

    /** Runs {@code task} on the control thread. */
    public void execute(Runnable task) {
        io[0].execute(task);
    }

    /** {@return whether there is no IO thread: the application polls (INLINE, single-threaded)} */
    public boolean isInline() {
        return io[0].isInline();
    }

    /** {@return the IO of a single-threaded instance, whose thread alone may post; else null} */
    public IoThread confined() {
        return io[0].isConfined() ? io[0] : null;
    }

    /** {@return whether the calling thread is one of these IO threads} */
    public boolean isIoThread() {
        for (IoThread t : io) {
            if (t.inThisThread()) {
                return true;
            }
        }
        return false;
    }

    /** {@return the kernel thread ids of the IO threads; empty when INLINE} */
    public int[] threadIds() {
        if (isInline()) {
            return new int[0];
        }
        int[] ids = new int[io.length];
        for (int i = 0; i < io.length; i++) {
            ids[i] = io[i].tid();
        }
        return ids;
    }

    /**
     * Waits for {@code f} (a control-path step), driving progress meanwhile when INLINE.
     *
     * @throws RdmaTimeoutException when it does not complete within {@code timeout}
     * @throws RdmaException        when interrupted; {@code f}'s own failure is rethrown as it is
     */
    public <T> T await(CompletableFuture<T> f, Duration timeout) {
        try {
            return io[0].await(f, timeout.toNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException("interrupted while waiting");
        } catch (TimeoutException e) {
            throw new RdmaTimeoutException("did not complete within " + timeout);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new RdmaException(e.getCause().toString(), e.getCause());
        }
    }

    /**
     * Refuses to close while a loop is driven by another thread that is alive (it would poll
     * freed memory).
     *
     * @throws IllegalStateException naming the loop and its driver
     */
    public void checkNotDrivenElsewhere() {
        for (IoThread t : io) {
            Thread driver = t.boundDriver();
            if (driver != null && driver != Thread.currentThread() && driver.isAlive()) {
                throw new IllegalStateException("cannot close: " + t.name() + " is still driven by thread \""
                        + driver.getName() + "\"; stop its driver (unbind the IoLoop) first");
            }
        }
    }

    /** Closes the connection manager on the control thread, waiting up to {@code timeout}. */
    public void closeManager(Duration timeout) {
        CompletableFuture<Void> cmClosed = new CompletableFuture<>();
        io[0].execute(() -> {
            cm.close();
            cmClosed.complete(null);
        });
        await(cmClosed, timeout);
    }

    /**
     * Stops the IO threads, then destroys their shared completion queues (the events for them
     * acknowledged first: {@code ibv_destroy_cq} waits for that) and closes their channels
     * (after {@link #closeManager}).
     */
    public void closeThreads() {
        for (IoThread t : io) {
            t.close();
        }
        closeShared();
        for (CompletionChannel ch : channels) {
            ch.close();
        }
    }

    private void closeShared() {
        for (int i = 0; i < shared.length; i++) {
            if (shared[i] != null) {
                if (channels[i] != null) {
                    channels[i].drainEvents();
                }
                shared[i].close();
            }
        }
    }

    /** After a start that failed: the threads, the channels and the manager, each that was made. */
    public void closeAfterFailedStart() {
        for (IoThread t : io) {
            if (t != null) {
                t.close();
            }
        }
        closeShared();
        for (CompletionChannel c : channels) {
            if (c != null) {
                c.close();
            }
        }
        if (cm != null) {
            cm.close();
        }
    }
}
