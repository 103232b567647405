package dev.jrdma.collective;

import dev.jrdma.ConnectionConfig;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link PeerGroup} forms and how long its collectives wait.
 *
 * @param joinTimeout       how long {@code join} waits for the whole mesh (members start at
 *                          different times: connections are retried until then)
 * @param collectiveTimeout how long one collective may wait for any member; past it the
 *                          collective fails on this member with a {@link CollectiveException}
 *                          naming a member it still waited for
 * @param connection        the configuration of each of the group's connections (its private
 *                          data is the group's own and is replaced)
 * @param rejoinTimeout     how long the group waits for a member whose connection was lost to
 *                          join again with its rank (a restarted process calling {@code join}
 *                          with the same member list and rank); zero: it does not wait, and a
 *                          lost member breaks the group (see {@link PeerGroup})
 */
public record GroupConfig(Duration joinTimeout, Duration collectiveTimeout, ConnectionConfig connection,
                          Duration rejoinTimeout) {
    public GroupConfig {
        Objects.requireNonNull(joinTimeout, "joinTimeout");
        Objects.requireNonNull(collectiveTimeout, "collectiveTimeout");
        Objects.requireNonNull(connection, "connection");
        Objects.requireNonNull(rejoinTimeout, "rejoinTimeout");
        if (joinTimeout.isNegative() || joinTimeout.isZero() || collectiveTimeout.isNegative() || collectiveTimeout.isZero()) {
            throw new IllegalArgumentException("GroupConfig: time-outs must be positive (joinTimeout " + joinTimeout
                    + ", collectiveTimeout " + collectiveTimeout + ")");
        }
        if (rejoinTimeout.isNegative()) {
            throw new IllegalArgumentException("GroupConfig: rejoinTimeout must be zero (no rejoin) or positive, not "
                    + rejoinTimeout);
        }
    }

    /** No rejoin: a lost member breaks the group. */
    public GroupConfig(Duration joinTimeout, Duration collectiveTimeout, ConnectionConfig connection) {
        this(joinTimeout, collectiveTimeout, connection, Duration.ZERO);
    }

    /** 60 s to form, 30 s per collective, default connections, no rejoin. */
    public static GroupConfig defaults() {
        return new GroupConfig(Duration.ofSeconds(60), Duration.ofSeconds(30), ConnectionConfig.defaults());
    }

    public GroupConfig withJoinTimeout(Duration d) {
        return new GroupConfig(d, collectiveTimeout, connection, rejoinTimeout);
    }

    public GroupConfig withCollectiveTimeout(Duration d) {
        return new GroupConfig(joinTimeout, d, connection, rejoinTimeout);
    }

    public GroupConfig withConnection(ConnectionConfig c) {
        return new GroupConfig(joinTimeout, collectiveTimeout, c, rejoinTimeout);
    }

    /** Members that are lost may join again within {@code d}; see {@link #rejoinTimeout()}. */
    public GroupConfig withRejoinTimeout(Duration d) {
        return new GroupConfig(joinTimeout, collectiveTimeout, connection, d);
    }

    boolean rejoins() {
        return !rejoinTimeout.isZero();
    }
}
