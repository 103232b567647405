package dev.jrdma;

import dev.jrdma.runtime.IoThread;

import java.util.function.BooleanSupplier;

/**
 * One IO loop of an {@link Rdma} built with {@link Rdma.Builder#ioLoops}: an IO thread without a
 * thread, which one thread of the application drives. That thread's own event loop (Netty's, in
 * jrdma-netty) then does jrdma's work in its passes: completions, connection events, and the
 * callbacks of the connections this loop serves, all on that thread, with no hand-over.
 *
 * <p>The driving thread {@link #bind binds} the loop, then repeats: {@link #poll()} (one pass:
 * the work that is there, without blocking), its own work, and when neither had any,
 * {@link #awaitWork} (sleep until a completion, an event, a task of jrdma's, {@link #wakeup()},
 * or a timeout). Other threads may post on the loop's connections; their blocking calls wait for
 * the driver, and a poll from them is refused, so that no callback of the loop runs elsewhere.
 * Once the driver {@link #unbind unbinds} (its event loop ends), blocking calls, {@code close}
 * among them, drive the loop themselves again.
 *
 * <pre>{@code
 * IoLoop loop = rdma.ioLoop(i);
 * loop.bind();
 * while (running) {
 *     int work = loop.poll() + runMyTasks();
 *     if (work == 0) {
 *         loop.awaitWork(nanosToMyNextTimer, this::hasMyTasks);   // others call loop.wakeup()
 *     }
 * }
 * loop.unbind();
 * }</pre>
 */
public final class IoLoop {
    private final Rdma rdma;
    private final IoThread io;
    private final int index;

    IoLoop(Rdma rdma, IoThread io, int index) {
        this.rdma = rdma;
        this.io = io;
        this.index = index;
    }

    /** {@return its index in its {@code Rdma}: {@link Connection#ioIndex()} of the connections it serves} */
    public int index() {
        return index;
    }

    /**
     * Makes the calling thread its driver: from now on only this thread polls it, and counts as
     * its IO thread ({@link Rdma#isIoThread()}) in a pass or not.
     *
     * @throws IllegalStateException when another thread drives it
     */
    public void bind() {
        io.bind();
    }

    /** The calling thread stops driving it (nothing when it does not); blocking calls then drive it themselves. */
    public void unbind() {
        io.unbind();
    }

    /**
     * One pass, on the calling thread, without blocking: jrdma's tasks, completions, connection
     * events and the callbacks they run.
     *
     * @return the work done (0: none)
     * @throws IllegalStateException when another thread is bound to it
     */
    public int poll() {
        return io.poll();
    }

    /**
     * Sleeps until there is work: a completion, a connection event, a task of jrdma's, a
     * {@link #wakeup()}, or {@code timeoutNanos} (at most 50 ms: jrdma's deadlines are checked at
     * least that often). First arms the completion queues and looks once more; then asks
     * {@code stayAwake}, after the loop is marked as sleeping: work the driver queued for itself
     * before that is seen there, and work queued after it must call {@link #wakeup()}, which ends
     * the sleep. The work found is done before it returns; callers {@link #poll()} next either way.
     *
     * @param timeoutNanos the longest sleep (0 or less: only arm and look)
     * @param stayAwake    whether the driver has work of its own waiting (then it does not sleep)
     * @return the work done by the last look (0 after a sleep)
     * @throws IllegalStateException when the calling thread is not its bound driver, or is in a pass
     */
    public int awaitWork(long timeoutNanos, BooleanSupplier stayAwake) {
        return io.awaitWork(timeoutNanos, stayAwake);
    }

    /**
     * Ends an {@link #awaitWork} now, or makes the next one return at once; from any thread. A
     * system call only while the loop sleeps.
     */
    public void wakeup() {
        io.wakeup();
    }

    /** {@return whether the calling thread drives it (bound to it, or in a pass of it)} */
    public boolean inLoop() {
        return io.inThisThread();
    }

    Rdma rdma() {
        return rdma;
    }

    IoThread io() {
        return io;
    }

    @Override
    public String toString() {
        return io.name();
    }
}
