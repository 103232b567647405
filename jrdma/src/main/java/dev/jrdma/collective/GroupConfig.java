package dev.jrdma.collective;

import dev.jrdma.ConnectionConfig;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link PeerGroup} forms, how long its collectives wait, who may join it and how much a
 * member may leave waiting in this member's memory.
 *
 * @param joinTimeout       how long {@code join} waits for the whole mesh (members start at
 *                          different times: connections are retried until then)
 * @param collectiveTimeout how long one collective may wait for any member; past it the
 *                          collective fails on this member with a {@link CollectiveException}
 *                          naming a member it still waited for
 * @param connection        the configuration of each of the group's connections (its private
 *                          data is the group's own and is replaced; with a secret, so is its auth token)
 * @param rejoinTimeout     how long the group waits for a member whose connection was lost to
 *                          join again with its rank (a restarted process calling {@code join}
 *                          with the same member list and rank); zero: it does not wait, and a
 *                          lost member breaks the group (see {@link PeerGroup})
 * @param secret            the group's shared secret (empty: none; else at least
 *                          {@value #MIN_SECRET_BYTES} bytes): every member must be given the same.
 *                          A connection that does not prove it is refused before it is given a rank
 *                          (see {@link PeerGroup}, "Who may take a rank")
 * @param inboxMessages     how many messages one member may have sent that this member has not
 *                          asked for yet (it started a collective before this one did); past it that
 *                          member's connection is failed (see {@link PeerGroup}, "Budgets")
 * @param inboxBytes        the same in bytes: payloads plus {@value #INBOX_ENTRY_BYTES} bytes per message
 */
public record GroupConfig(Duration joinTimeout, Duration collectiveTimeout, ConnectionConfig connection,
                          Duration rejoinTimeout, byte[] secret, int inboxMessages, long inboxBytes) {
    /** The shortest secret accepted: 128 bits. */
    public static final int MIN_SECRET_BYTES = 16;
    /** The longest secret accepted (an HMAC key longer than its block is hashed first anyway). */
    public static final int MAX_SECRET_BYTES = 1024;
    /** The default of {@link #inboxMessages()}: far more than an honest member leaves waiting (a few per collective it is ahead by). */
    public static final int DEFAULT_INBOX_MESSAGES = 4096;
    /** The default of {@link #inboxBytes()}: 4 MiB. */
    public static final long DEFAULT_INBOX_BYTES = 4L << 20;
    /** What one waiting message is counted for besides its payload (its map entry, key and array header). */
    public static final int INBOX_ENTRY_BYTES = 64;

    /**
     * Checks the values: time-outs positive, the rejoin time-out zero or positive, the secret empty
     * or {@value #MIN_SECRET_BYTES} to {@value #MAX_SECRET_BYTES} bytes (it is copied), the inbox
     * limits positive, none null.
     */
    public GroupConfig {
        Objects.requireNonNull(joinTimeout, "joinTimeout");
        Objects.requireNonNull(collectiveTimeout, "collectiveTimeout");
        Objects.requireNonNull(connection, "connection");
        Objects.requireNonNull(rejoinTimeout, "rejoinTimeout");
        Objects.requireNonNull(secret, "secret");
        if (joinTimeout.isNegative() || joinTimeout.isZero() || collectiveTimeout.isNegative() || collectiveTimeout.isZero()) {
            throw new IllegalArgumentException("GroupConfig: time-outs must be positive (joinTimeout " + joinTimeout
                    + ", collectiveTimeout " + collectiveTimeout + ")");
        }
        if (rejoinTimeout.isNegative()) {
            throw new IllegalArgumentException("GroupConfig: rejoinTimeout must be zero (no rejoin) or positive, not "
                    + rejoinTimeout);
        }
        if (secret.length != 0 && (secret.length < MIN_SECRET_BYTES || secret.length > MAX_SECRET_BYTES)) {
            throw new IllegalArgumentException("GroupConfig: a secret must be empty (none) or " + MIN_SECRET_BYTES + " to "
                    + MAX_SECRET_BYTES + " bytes, not " + secret.length + " bytes");
        }
        if (inboxMessages < 1 || inboxBytes < INBOX_ENTRY_BYTES) {
            throw new IllegalArgumentException("GroupConfig: the inbox limits must be at least 1 message and "
                    + INBOX_ENTRY_BYTES + " bytes, not " + inboxMessages + " messages and " + inboxBytes + " bytes");
        }
        secret = secret.clone();
    }

    /**
     * No secret, the default inbox limits.
     *
     * @param joinTimeout how long forming may take
     * @param collectiveTimeout how long one collective may wait for any member
     * @param connection the connection
     * @param rejoinTimeout how long to wait for a lost member to join again; zero: not at all
     */
    public GroupConfig(Duration joinTimeout, Duration collectiveTimeout, ConnectionConfig connection, Duration rejoinTimeout) {
        this(joinTimeout, collectiveTimeout, connection, rejoinTimeout, new byte[0], DEFAULT_INBOX_MESSAGES, DEFAULT_INBOX_BYTES);
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
     * 60 s to form, 30 s per collective, default connections, no rejoin, no secret, an inbox of
     * {@value #DEFAULT_INBOX_MESSAGES} messages and 4 MiB per member.
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
        return new GroupConfig(d, collectiveTimeout, connection, rejoinTimeout, secret, inboxMessages, inboxBytes);
    }

    /**
     * This config with another time-out per collective.
     *
     * @param d how long one collective may wait for any member
     * @return the new config
     */
    public GroupConfig withCollectiveTimeout(Duration d) {
        return new GroupConfig(joinTimeout, d, connection, rejoinTimeout, secret, inboxMessages, inboxBytes);
    }

    /**
     * This config with another configuration for the group's connections.
     *
     * @param c the configuration of each of the group's connections
     * @return the new config
     */
    public GroupConfig withConnection(ConnectionConfig c) {
        return new GroupConfig(joinTimeout, collectiveTimeout, c, rejoinTimeout, secret, inboxMessages, inboxBytes);
    }

    /**
     * Members that are lost may join again within {@code d}; see {@link #rejoinTimeout()}.
     *
     * @param d how long to wait for a lost member to join again; zero: not at all
     * @return the new config
     */
    public GroupConfig withRejoinTimeout(Duration d) {
        return new GroupConfig(joinTimeout, collectiveTimeout, connection, d, secret, inboxMessages, inboxBytes);
    }

    /**
     * This config with a group secret; see {@link #secret()}.
     *
     * @param s the secret (copied), the same on every member; empty: none
     * @return the new config
     */
    public GroupConfig withSecret(byte[] s) {
        return new GroupConfig(joinTimeout, collectiveTimeout, connection, rejoinTimeout, s, inboxMessages, inboxBytes);
    }

    /**
     * This config with other inbox limits; see {@link #inboxMessages()}.
     *
     * @param messages how many messages a member may leave waiting here
     * @param bytes how many bytes they may hold, {@value #INBOX_ENTRY_BYTES} per message counted besides its payload
     * @return the new config
     */
    public GroupConfig withInboxLimits(int messages, long bytes) {
        return new GroupConfig(joinTimeout, collectiveTimeout, connection, rejoinTimeout, secret, messages, bytes);
    }

    /** {@return a copy of the group's secret; empty when it has none} */
    @Override
    public byte[] secret() {
        return secret.clone();
    }

    boolean rejoins() {
        return !rejoinTimeout.isZero();
    }

    boolean hasSecret() {
        return secret.length > 0;
    }

    /** The secret itself, not a copy: for the proofs, never handed out. */
    byte[] secretRef() {
        return secret;
    }

    /** {@return whether {@code o} is a config with the same values, the secret compared by content} */
    @Override
    public boolean equals(Object o) {
        return o instanceof GroupConfig g && joinTimeout.equals(g.joinTimeout) && collectiveTimeout.equals(g.collectiveTimeout)
                && connection.equals(g.connection) && rejoinTimeout.equals(g.rejoinTimeout)
                && java.security.MessageDigest.isEqual(secret, g.secret)
                && inboxMessages == g.inboxMessages && inboxBytes == g.inboxBytes;
    }

    /** {@return a hash of the values, the secret's content left out} */
    @Override
    public int hashCode() {
        return Objects.hash(joinTimeout, collectiveTimeout, connection, rejoinTimeout, inboxMessages, inboxBytes);
    }

    /** {@return the values, the secret only as whether there is one and its length} */
    @Override
    public String toString() {
        return "GroupConfig[joinTimeout=" + joinTimeout + ", collectiveTimeout=" + collectiveTimeout + ", connection=" + connection
                + ", rejoinTimeout=" + rejoinTimeout + ", secret=" + (secret.length == 0 ? "none" : secret.length + " bytes")
                + ", inboxMessages=" + inboxMessages + ", inboxBytes=" + inboxBytes + "]";
    }
}
