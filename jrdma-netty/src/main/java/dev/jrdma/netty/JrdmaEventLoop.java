package dev.jrdma.netty;

import dev.jrdma.Connection;
import dev.jrdma.IoLoop;
import io.netty.channel.Channel;
import io.netty.channel.SingleThreadEventLoop;
import io.netty.util.concurrent.RejectedExecutionHandlers;
import io.netty.util.internal.PlatformDependent;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A Netty event loop whose thread is one of jrdma's IO loops ({@link IoLoop}): each pass polls
 * jrdma (completions, connection events, and the receive and completion callbacks of the
 * connections this loop serves, which drive its channels' pipelines directly), then runs Netty's
 * tasks; with neither to do it spins for a short budget, then sleeps in jrdma's completion
 * channel until a completion, a connection event, a task or the next scheduled task. Netty's
 * epoll and io_uring loops are built the same way around their own wait.
 *
 * <p>Made by {@link JrdmaEventLoopGroup}; the channels of this transport run only on it.
 */
public final class JrdmaEventLoop extends SingleThreadEventLoop {
    private final IoLoop io;
    private final JrdmaEventLoopGroup.Shared shared;
    private final long spinNanos;
    /** Whether Netty has tasks waiting: asked by jrdma after the loop says it sleeps (one object, made once). */
    private final BooleanSupplier hasTasks = this::hasTasks;
    /** The channels registered here: closed when the loop shuts down. On this loop's thread only. */
    private final Set<Channel> channels = new HashSet<>();

    JrdmaEventLoop(JrdmaEventLoopGroup parent, Executor executor, IoLoop io, JrdmaEventLoopGroup.Shared shared) {
        super(parent, executor, false, DEFAULT_MAX_PENDING_TASKS, RejectedExecutionHandlers.reject());
        this.io = io;
        this.shared = shared;
        this.spinNanos = shared.spinNanos;
    }

    /** The jrdma IO loop this event loop drives. */
    IoLoop ioLoop() {
        return io;
    }

    /** {@return whether {@code connection}, of this group's Rdma, has its completions and callbacks run on this loop} */
    boolean serves(Connection connection) {
        return connection.ioIndex() == io.index();
    }

    JrdmaEventLoopGroup.Shared shared() {
        return shared;
    }

    void add(Channel channel) {
        channels.add(channel);
    }

    void remove(Channel channel) {
        channels.remove(channel);
    }

    @Override
    protected Queue<Runnable> newTaskQueue(int maxPendingTasks) {
        // Producers are any threads, the consumer this loop alone, and it never blocks in takeTask():
        // the queue epoll's and io_uring's loops use.
        return maxPendingTasks == Integer.MAX_VALUE ? PlatformDependent.<Runnable>newMpscQueue()
                : PlatformDependent.<Runnable>newMpscQueue(maxPendingTasks);
    }

    @Override
    protected void wakeup(boolean inEventLoop) {
        if (!inEventLoop) {
            io.wakeup();   // a system call only while the loop sleeps
        }
    }

    @Override
    protected void run() {
        io.bind();
        long idleSince = 0;
        boolean idle = false;
        for (;;) {
            try {
                long ioStart = System.nanoTime();
                int work = io.poll();
                // Netty's tasks get as long as the jrdma pass took (epoll's default ioRatio of 50),
                // or Netty's smallest batch (64 tasks) after a pass without work: a task that
                // queues itself again (a handler reading or writing in a loop) must not keep the
                // loop from polling jrdma, as an unbounded runAllTasks() would.
                boolean ran = runAllTasks(work > 0 ? System.nanoTime() - ioStart : 0);
                if (work > 0 || ran) {
                    idle = false;
                } else if (!idle) {
                    idle = true;
                    idleSince = System.nanoTime();
                } else if (System.nanoTime() - idleSince < spinNanos) {
                    Thread.onSpinWait();
                } else {
                    io.awaitWork(sleepNanos(), hasTasks);
                    idle = false;
                }
            } catch (Throwable t) {
                handleLoopException(t);
            }
            if (isShuttingDown()) {
                closeAll();
                if (confirmShutdown()) {
                    break;
                }
            }
        }
    }

    /** Until the next scheduled task is due (0 when one is), or a long while when none is. */
    private long sleepNanos() {
        long deadline = nextScheduledTaskDeadlineNanos();
        if (deadline == -1) {
            return TimeUnit.SECONDS.toNanos(1);
        }
        return Math.max(0, deadline - getCurrentTimeNanos());
    }

    private static void handleLoopException(Throwable t) {
        JrdmaEventLoopGroup.LOG.warn("Unexpected exception in the jrdma event loop", t);
        // As epoll's loop: a failure that repeats must not take a core for a busy loop of failures.
        try {
            Thread.sleep(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void closeAll() {
        List<Channel> open = new ArrayList<>(channels);
        for (Channel ch : open) {
            ch.unsafe().close(ch.unsafe().voidPromise());
        }
    }

    @Override
    protected void cleanup() {
        io.unbind();
        shared.loopEnded();
    }
}
