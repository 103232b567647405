package dev.jrdma;

import dev.jrdma.exceptions.ConnectionClosedException;
import dev.jrdma.exceptions.RdmaException;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * Connects a client connection again after it failed, as its {@link ReconnectPolicy} says, and
 * tells its {@link ConnectionListener}. One per connection handle (the {@link Connection} the
 * application holds); each connect makes a new life, which the handle then forwards to.
 *
 * <p>A life that fails is torn down first (its outstanding operations fail, each once); its
 * release starts the attempts. Attempts wait on the JDK's delay scheduler, not on an IO thread,
 * so a slow backoff holds no thread of ours. Synchronized: a life's release (on its IO thread),
 * an attempt's end (on IO thread 0) and the application's close may meet.
 *
 * <p>A life an attempt established is on probation until it has been up the policy's
 * {@link ReconnectPolicy#healthyAfter}: failing sooner, it does not start a new round but goes
 * on with the one that made it (attempt count, time since the first failure, backoff), so a
 * server that accepts and drops every connection cannot hold a client in a reconnect loop past
 * the policy's limits.
 */
final class Reconnector {
    private static final System.Logger LOG = System.getLogger("dev.jrdma");

    private final Connection handle;
    private final Rdma rdma;
    private final InetSocketAddress address;
    private final ConnectionConfig config;
    private final ReconnectPolicy policy;
    private final ConnectionListener listener;

    private volatile boolean reconnecting;
    private boolean stopped;
    /** The life whose failure started the current round (a release is acted on once). */
    private Connection failedLife;
    private int attempt;
    private long failedAt;
    private RdmaException lastCause;
    /** The life the last attempt established, until it fails or turns out healthy; null for the application's own. */
    private Connection onProbation;
    /** When {@link #onProbation} was established, and when it failed (0: not yet). */
    private long probationSince;
    private long probationFailedAt;
    /** Lives of this round that failed while on probation. */
    private int unhealthyLives;

    Reconnector(Connection handle, Rdma rdma, InetSocketAddress address, ConnectionConfig config) {
        this.handle = handle;
        this.rdma = rdma;
        this.address = address;
        this.config = config;
        this.policy = config.reconnect();
        this.listener = config.listener();
    }

    /** Between a failure and the next established life (or giving up). */
    boolean reconnecting() {
        return reconnecting;
    }

    /** The application closed the connection: no more attempts; a life that connects meanwhile is closed. */
    synchronized void stop() {
        stopped = true;
        reconnecting = false;
    }

    /** {@code life} went to ERROR (on its IO thread): tear it down, so that its release starts the round. */
    void lifeFailed(Connection life) {
        synchronized (this) {
            if (life == onProbation && probationFailedAt == 0) {
                probationFailedAt = System.nanoTime();   // its uptime ends here, not when its teardown ends
            }
        }
        if (life == handle.live()) {
            life.life.closeAsync();   // the teardown runs on its IO thread
        }
    }

    /** Whether the current life would start a new round if it failed now (tests wait on it). */
    synchronized boolean currentLifeHealthy() {
        return !reconnecting && (onProbation == null
                || System.nanoTime() - probationSince >= policy.healthyAfter().toNanos());
    }

    /** {@code life}, once established, is released; {@code cause} is its first failure. On its IO thread. */
    void lifeReleased(Connection life, RdmaException cause) {
        synchronized (this) {
            if (stopped || rdma.isClosed() || life != handle.live() || life == failedLife) {
                return;   // closed by the application, or an old life
            }
            failedLife = life;
            reconnecting = true;
            long now = System.nanoTime();
            long upFor = (probationFailedAt != 0 ? probationFailedAt : now) - probationSince;
            if (life == onProbation && upFor < policy.healthyAfter().toNanos()) {
                unhealthyLives++;   // the round that made it goes on: its attempts and its time
                LOG.log(System.Logger.Level.INFO, "the connection to {0} of attempt {1} failed after {2} ms, before it was"
                        + " healthy ({3} up): the attempts go on counting", address, attempt, upFor / 1_000_000,
                        policy.healthyAfter());
            } else {
                attempt = 0;
                failedAt = now;
                unhealthyLives = 0;
            }
            onProbation = null;
            lastCause = cause;
        }
        tell(() -> listener.failed(handle, cause));
        next();
    }

    /** Schedules the next attempt, or gives up. */
    private void next() {
        long computed = 0;
        int n;
        RdmaException previous, gaveUpWith = null;
        synchronized (this) {
            previous = lastCause;
            if (stopped) {
                return;
            }
            n = ++attempt;
            long elapsed = System.nanoTime() - failedAt;
            if (n > policy.maxAttempts() || elapsed >= policy.giveUpAfter().toNanos() || rdma.isClosed()) {
                reconnecting = false;
                gaveUpWith = rdma.isClosed()
                        ? new ConnectionClosedException("reconnecting to " + address + ": the Rdma instance is closed", lastCause)
                        : unhealthyLives > 0 ? flapping(n - 1, elapsed) : lastCause;
            } else {
                computed = Math.min(policy.delayNanos(n), policy.giveUpAfter().toNanos() - elapsed);
            }
        }
        if (gaveUpWith != null) {   // told outside the monitor, as every other event
            RdmaException last = gaveUpWith;
            LOG.log(System.Logger.Level.WARNING, "gave up reconnecting to {0} after {1} attempts: {2}", address, n - 1,
                    last.getMessage());
            tell(() -> listener.gaveUp(handle, last));
            return;
        }
        long delay = computed;
        LOG.log(System.Logger.Level.INFO, "reconnecting to {0}: attempt {1} in {2} ms ({3}: {4})", address, n,
                delay / 1_000_000, n == 1 ? "the failure" : "attempt " + (n - 1),
                previous == null ? "no cause" : previous.getMessage());
        tell(() -> listener.reconnecting(handle, n, Duration.ofNanos(delay)));
        CompletableFuture.delayedExecutor(delay, TimeUnit.NANOSECONDS).execute(() -> attempt(n));
    }

    /** Why a round that ended with connections the server dropped at once gave up; under this. */
    private ConnectionClosedException flapping(int attempts, long elapsedNanos) {
        return new ConnectionClosedException("reconnecting to " + address + ": gave up after " + attempts + " attempts in "
                + elapsedNanos / 1_000_000 + " ms (" + policy + "): " + unhealthyLives + " of them connected and failed"
                + " before they were healthy (up " + policy.healthyAfter() + "), as a server that accepts and drops"
                + " every connection makes them; the last failure: " + (lastCause == null ? "none" : lastCause.getMessage()),
                lastCause);
    }

    private void attempt(int n) {
        synchronized (this) {
            if (stopped) {
                return;
            }
        }
        CompletableFuture<Connection> f;
        try {
            f = rdma.control().connectLife(address, config, handle);
        } catch (RuntimeException e) {   // the Rdma closed, or the config no longer fits the device
            failedAttempt(e);
            return;
        }
        f.whenComplete((c, e) -> {
            if (e == null) {
                established(c, n);
            } else {
                failedAttempt(e);
            }
        });
    }

    private void established(Connection c, int n) {
        synchronized (this) {
            if (stopped) {
                c.closeAsync();
                return;
            }
            handle.adopt(c);
            reconnecting = false;
            onProbation = c;   // the count starts again only once it proves healthy (lifeReleased)
            probationSince = System.nanoTime();
            probationFailedAt = 0;
        }
        LOG.log(System.Logger.Level.INFO, "reconnected to {0} on attempt {1}", address, n);
        tell(() -> listener.connected(handle, n));
        // It may have failed before it was adopted, and its release then went unheard.
        if (c.life.isReleased()) {
            lifeReleased(c, c.life.failure());
        }
    }

    private void failedAttempt(Throwable e) {
        Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        synchronized (this) {
            lastCause = t instanceof RdmaException r ? r : new RdmaException("reconnecting to " + address + ": " + t, t);
        }
        LOG.log(System.Logger.Level.DEBUG, "reconnect attempt to {0} failed: {1}", address, t.toString());
        next();
    }

    private void tell(Runnable event) {
        try {
            event.run();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "the connection listener of " + address + " threw", e);
        }
    }
}
