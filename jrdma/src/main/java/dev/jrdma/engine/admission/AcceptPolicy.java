package dev.jrdma.engine.admission;

import dev.jrdma.spi.Log;
import dev.jrdma.spi.SourceAddress;

import java.net.InetSocketAddress;
import java.security.MessageDigest;
import java.util.concurrent.TimeUnit;
import java.util.function.ToIntFunction;

/**
 * Whether a server takes a connection request, and if not, the reason the client is told: in
 * this order, the source's wait ({@link SourcePenalties}: neither checked nor counted while it
 * lasts), the auth token (compared in constant time; a wrong one counts against the source), the
 * most connections at once, and the most from one source. The offences of established
 * connections come in through {@link #offended}. Log lines a peer can cause as often as it likes
 * are rate-limited ({@link Log#limited}).
 *
 * <p>Threads: one owner, the thread that handles the connection manager's events (an
 * {@code Rdma}'s IO thread 0).
 */
public final class AcceptPolicy {
    private final SourcePenalties penalties;   // null: off (Rdma.Builder.sourcePenalties(false))
    private final int maxConnections;
    private final int maxConnectionsPerSource;

    /**
     * @param penalties the table of failures by source, or null to look at every request
     * @param maxConnections the most connections the servers hold at once
     * @param maxConnectionsPerSource the most from one source (at {@code maxConnections} or more: no such limit)
     */
    /**
     * The builder's settings as a policy: penalties on or off, and at most
     * {@code maxConnectionsPerSource} per source (0: a quarter of {@code maxConnections}, at
     * least 1024 and at most all of them).
     */
    public static AcceptPolicy of(boolean sourcePenalties, int maxConnections, int maxConnectionsPerSource) {
        return new AcceptPolicy(sourcePenalties ? new SourcePenalties() : null, maxConnections,
                maxConnectionsPerSource > 0 ? maxConnectionsPerSource : Math.min(maxConnections, Math.max(1024, maxConnections / 4)));
    }

    public AcceptPolicy(SourcePenalties penalties, int maxConnections, int maxConnectionsPerSource) {
        this.penalties = penalties;
        this.maxConnections = maxConnections;
        this.maxConnectionsPerSource = maxConnectionsPerSource;
    }

    /**
     * {@return null to accept the request, or why it is refused (for the client)}
     *
     * @param from the client's address (null when the provider does not know it)
     * @param expectedToken the server's auth token (empty: none)
     * @param presentedToken the token the client sent (empty: none)
     * @param connections how many connections the servers hold now
     * @param fromSource how many of them come from a source, asked only when the limit applies
     */
    public String refusal(InetSocketAddress from, byte[] expectedToken, byte[] presentedToken, int connections,
                          ToIntFunction<SourceAddress> fromSource) {
        long wait = from == null || penalties == null ? 0 : penalties.waitNanos(from.getAddress());
        if (wait > 0) {
            // Neither checked nor counted: a source past its allowance gets one try per wait.
            Log.limited("rdma.penalized", System.Logger.Level.WARNING, "refused connection requests from "
                    + from.getAddress().getHostAddress() + " unchecked: too many failed attempts or misused"
                    + " connections from that address lately (" + penalties.refusedWhileWaiting() + " refused so far)");
            return "too many failed attempts from this address: retry in " + (TimeUnit.NANOSECONDS.toMillis(wait) + 1) + " ms";
        }
        if (expectedToken.length > 0 && !MessageDigest.isEqual(expectedToken, presentedToken)) {
            if (from != null && penalties != null) {
                penalties.authFailed(from.getAddress());
            }
            Log.limited("rdma.authFailed", System.Logger.Level.WARNING, "rejected a connection from " + from
                    + ": wrong or missing auth token");
            return "authentication failed: the auth token does not match the server's";
        }
        if (connections >= maxConnections) {
            Log.limited("rdma.maxConnections", System.Logger.Level.WARNING, "rejected a connection from " + from + ": "
                    + connections + " connections already (maxConnections)");
            return "too many connections: the server holds " + maxConnections;
        }
        if (from != null && maxConnectionsPerSource < maxConnections
                && fromSource.applyAsInt(SourceAddress.of(from.getAddress())) >= maxConnectionsPerSource) {
            Log.limited("rdma.perSource", System.Logger.Level.WARNING, "rejected a connection from " + from + ": "
                    + maxConnectionsPerSource + " connections from that address already (maxConnectionsPerSource)");
            return "too many connections from this address: the server takes " + maxConnectionsPerSource;
        }
        return null;
    }

    /** An established connection from {@code from} was misused by its peer (a key never issued, a protocol error). */
    public void offended(InetSocketAddress from) {
        if (from != null && penalties != null) {
            penalties.offended(from.getAddress());
        }
    }

    /** {@return the table of failures by source, or null when off} */
    public SourcePenalties penalties() {
        return penalties;
    }
}
