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
 */
public record GroupConfig(Duration joinTimeout, Duration collectiveTimeout, ConnectionConfig connection) {
    public GroupConfig {
        Objects.requireNonNull(joinTimeout, "joinTimeout");
        Objects.requireNonNull(collectiveTimeout, "collectiveTimeout");
        Objects.requireNonNull(connection, "connection");
        if (joinTimeout.isNegative() || joinTimeout.isZero() || collectiveTimeout.isNegative() || collectiveTimeout.isZero()) {
            throw new IllegalArgumentException("GroupConfig: time-outs must be positive (joinTimeout " + joinTimeout
                    + ", collectiveTimeout " + collectiveTimeout + ")");
        }
    }

    /** 60 s to form, 30 s per collective, default connections. */
    public static GroupConfig defaults() {
        return new GroupConfig(Duration.ofSeconds(60), Duration.ofSeconds(30), ConnectionConfig.defaults());
    }

    public GroupConfig withJoinTimeout(Duration d) {
        return new GroupConfig(d, collectiveTimeout, connection);
    }

    public GroupConfig withCollectiveTimeout(Duration d) {
        return new GroupConfig(joinTimeout, d, connection);
    }

    public GroupConfig withConnection(ConnectionConfig c) {
        return new GroupConfig(joinTimeout, collectiveTimeout, c);
    }
}
