package dev.jrdma.netty;

import dev.jrdma.Rdma;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.MultithreadEventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The event loops of jrdma's Netty transport: used as Netty's epoll and io_uring groups are,
 * <pre>{@code
 * EventLoopGroup group = new JrdmaEventLoopGroup();
 * new ServerBootstrap().group(group).channel(JrdmaServerChannel.class)...
 * new Bootstrap().group(group).channel(JrdmaSocketChannel.class)...
 * }</pre>
 *
 * <p>The group owns one {@link Rdma} (the provider {@code auto} unless a builder says otherwise:
 * verbs where a device is up, shm to peers on this host, tcp to the rest) built with one IO loop
 * per event loop ({@link Rdma.Builder#ioLoops}): each event loop's thread is its loop's IO thread,
 * so a connection's completions and the pipeline of its channel run on one thread with no
 * hand-over. A connection is served by one loop for its whole life: a client channel's by the
 * loop it is registered on, an accepted one's by the loop jrdma gave it, which is where
 * {@link #register(Channel)} puts its channel. So a server's child group must be the same group as
 * its parent group ({@code group(g)} or {@code group(g, g)}); a child accepted by another group's
 * server fails to register, saying so. The {@code Rdma} is closed when the last loop ends.
 */
public final class JrdmaEventLoopGroup extends MultithreadEventLoopGroup {
    static final InternalLogger LOG = InternalLoggerFactory.getInstance(JrdmaEventLoopGroup.class);

    /** How long a loop with nothing to do polls before it sleeps: about an RDMA round trip. */
    public static final long DEFAULT_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    /** The longest spin a group takes: beyond it, a loop that should sleep burns a CPU for nothing. */
    private static final Duration MAX_SPIN = Duration.ofSeconds(1);

    private final Shared shared;

    /** What the loops of one group share: the Rdma, and who closes it. */
    static final class Shared {
        final Rdma rdma;
        final JrdmaByteBufAllocator allocator;
        final int loops;
        final long spinNanos;
        /** The loops by the index of their IO loop: filled by newChild, in the group's constructor. */
        final JrdmaEventLoop[] eventLoops;
        private int made;
        private final AtomicInteger running;

        Shared(Rdma.Builder builder, int loops, long spinNanos) {
            this.loops = loops;
            this.spinNanos = spinNanos;
            this.rdma = builder.ioLoops(loops).build();
            this.allocator = new JrdmaByteBufAllocator(rdma);
            this.eventLoops = new JrdmaEventLoop[loops];
            this.running = new AtomicInteger(loops);
        }

        /** The next loop, on IO loop {@code made}: called {@code loops} times from the group's constructor. */
        JrdmaEventLoop newLoop(JrdmaEventLoopGroup group, Executor executor) {
            int i = made++;
            eventLoops[i] = new JrdmaEventLoop(group, executor, rdma.ioLoop(i), this);
            return eventLoops[i];
        }

        /** A loop ended (its thread no longer drives its IO loop); the last one closes the Rdma. */
        void loopEnded() {
            if (running.decrementAndGet() == 0) {
                try {
                    rdma.close();
                } catch (RuntimeException e) {
                    LOG.warn("closing the jrdma instance of an event loop group", e);
                }
            }
        }
    }

    /** {@link MultithreadEventLoopGroup}'s default number of loops (twice the CPUs), provider {@code auto}. */
    public JrdmaEventLoopGroup() {
        this(0);
    }

    /**
     * A group of {@code nThreads} loops on jrdma's default provider ("auto").
     *
     * @param nThreads event loops (0: Netty's default, twice the CPUs)
     */
    public JrdmaEventLoopGroup(int nThreads) {
        this(nThreads, (ThreadFactory) null);
    }

    /**
     * A group of {@code nThreads} loops on jrdma's default provider ("auto"), on threads of {@code threadFactory}.
     *
     * @param nThreads      event loops (0: Netty's default, twice the CPUs)
     * @param threadFactory makes the loops' threads (null: Netty's default)
     */
    public JrdmaEventLoopGroup(int nThreads, ThreadFactory threadFactory) {
        this(nThreads, threadFactory, Rdma.builder());
    }

    /**
     * A group of {@code nThreads} loops on the jrdma that {@code rdma} builds (its provider, device and limits).
     *
     * @param nThreads      event loops (0: Netty's default, twice the CPUs)
     * @param threadFactory makes the loops' threads (null: Netty's default)
     * @param rdma          how to open jrdma: the provider, device, limits ({@code ioLoops} is set
     *                      here, one per event loop; {@code ioThreads}, {@code singleThreaded} and
     *                      {@code cpuAffinity} do not apply: pin the loops' threads instead)
     */
    public JrdmaEventLoopGroup(int nThreads, ThreadFactory threadFactory, Rdma.Builder rdma) {
        this(nThreads, threadFactory, rdma, Duration.ofNanos(DEFAULT_SPIN_NANOS));
    }

    /**
     * A group whose idle loops poll for {@code spin} before they sleep. Spinning saves the wake-up
     * of a sleeping thread (several microseconds, far more on a loaded machine) when the peer
     * answers within the spin, and costs a CPU while it lasts: on a machine with fewer CPUs than
     * busy threads, a spinning loop takes the CPU another thread (the peer's loop, the
     * application's work) needs. {@link Duration#ZERO} sleeps at once, as Netty's epoll loop does.
     *
     * @param nThreads      event loops (0: Netty's default, twice the CPUs)
     * @param threadFactory makes the loops' threads (null: Netty's default)
     * @param rdma          how to open jrdma (as {@link #JrdmaEventLoopGroup(int, ThreadFactory, Rdma.Builder)})
     * @param spin          how long an idle loop polls before it sleeps ({@link #DEFAULT_SPIN_NANOS} by default)
     * @throws IllegalArgumentException when {@code spin} is negative or longer than a second
     */
    public JrdmaEventLoopGroup(int nThreads, ThreadFactory threadFactory, Rdma.Builder rdma, Duration spin) {
        this(new Shared(Objects.requireNonNull(rdma, "rdma"), loops(nThreads), spinNanos(spin)), threadFactory);
    }

    private static long spinNanos(Duration spin) {
        Objects.requireNonNull(spin, "spin");
        if (spin.isNegative() || spin.compareTo(MAX_SPIN) > 0) {
            throw new IllegalArgumentException("spin must be between 0 and " + MAX_SPIN + ", not " + spin);
        }
        return spin.toNanos();
    }

    private JrdmaEventLoopGroup(Shared shared, ThreadFactory threadFactory) {
        super(shared.loops, threadFactory, shared);
        this.shared = shared;
        // Every loop must run from the start: loop 0 serves the connection manager, and accepted
        // connections go to any loop. Netty starts a loop's thread at its first task.
        for (EventExecutor e : this) {
            e.execute(() -> { });
        }
    }

    private static int loops(int nThreads) {
        if (nThreads < 0) {
            throw new IllegalArgumentException("nThreads must be 0 (the default) or more, not " + nThreads);
        }
        return nThreads == 0 ? Math.max(1, io.netty.util.NettyRuntime.availableProcessors() * 2) : nThreads;
    }

    @Override
    protected EventLoop newChild(Executor executor, Object... args) {
        return ((Shared) args[0]).newLoop(this, executor);
    }

    /**
     * {@return the group's jrdma instance: for registered memory ({@code rdma().allocate}) that the
     * channels of this group can send without a copy, its provider, its device}
     */
    public Rdma rdma() {
        return shared.rdma;
    }

    /**
     * {@return buffers in the group's registered memory: its channels send a direct buffer of it
     * without copying it ({@code ChannelOption.ALLOCATOR}); one allocator per group}
     */
    public JrdmaByteBufAllocator allocator() {
        return shared.allocator;
    }

    /**
     * Registers {@code channel}: an accepted jrdma channel on the loop that serves its connection,
     * any other on the next loop.
     */
    @Override
    public ChannelFuture register(Channel channel) {
        return register(new DefaultChannelPromise(channel, loopFor(channel)));
    }

    @Override
    public ChannelFuture register(ChannelPromise promise) {
        Channel channel = promise.channel();
        if (channel instanceof JrdmaSocketChannel c && c.acceptedBy() != null && c.acceptedBy() != shared) {
            return promise.setFailure(new IllegalStateException("a jrdma channel accepted by another JrdmaEventLoopGroup's "
                    + "server cannot be registered here: its connection is served by that group's loops; give the "
                    + "ServerBootstrap the same group as parent and child group"));
        }
        return loopFor(channel).register(promise);
    }

    private EventLoop loopFor(Channel channel) {
        if (channel instanceof JrdmaSocketChannel c && c.acceptedBy() == shared) {
            return shared.eventLoops[c.connection().ioIndex()];
        }
        return next();
    }
}
