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
    /** Checks the values: time-outs positive, the rejoin time-out zero or positive, none null. */
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

    /**
     * No rejoin: a lost member breaks the group.
     *
     * @param joinTimeout how long forming may take
     * @param collectiveTimeout how long one collective may wait for any member
     * @param connection the connection
     */
    public GroupConfig(Duration joinTimeout, Duration collectiveTimeout, ConnectionConfig connection) {
        this(joinTimeout, collectiveTimeout, connection, Duration.ZERO);
    }

    /**
     * 60 s to form, 30 s per collective, default connections, no rejoin.
     *
     * @return the new config
     */
    public static GroupConfig defaults() {
        return new GroupConfig(Duration.ofSeconds(60), Duration.ofSeconds(30), ConnectionConfig.defaults());
    }

    /**
     * This config with another join time-out.
     *
     * @param d how long forming may take
     * @return the new config
     */
    public GroupConfig withJoinTimeout(Duration d) {
        return new GroupConfig(d, collectiveTimeout, connection, rejoinTimeout);
    }

    /**
     * This config with another time-out per collective.
     *
     * @param d how long one collective may wait for any member
     * @return the new config
     */
    public GroupConfig withCollectiveTimeout(Duration d) {
        return new GroupConfig(joinTimeout, d, connection, rejoinTimeout);
    }

    /**
     * This config with another configuration for the group's connections.
     *
     * @param c the configuration of each of the group's connections
     * @return the new config
     */
    public GroupConfig withConnection(ConnectionConfig c) {
        return new GroupConfig(joinTimeout, collectiveTimeout, c, rejoinTimeout);
    }

    /**
     * Members that are lost may join again within {@code d}; see {@link #rejoinTimeout()}.
     *
     * @param d how long to wait for a lost member to join again; zero: not at all
     * @return the new config
     */
    public GroupConfig withRejoinTimeout(Duration d) {
        return new GroupConfig(joinTimeout, collectiveTimeout, connection, d);
    }

    boolean rejoins() {
        return !rejoinTimeout.isZero();
    }
}
